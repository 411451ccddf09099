import IngestCore

/// Reads of a ``LocalStore`` inside ``LocalStore/read(_:)``: one consistent
/// snapshot. Valid only inside the closure.
public struct LocalStoreReader {
    let access: LocalStoreAccess

    /// The object of `className` whose primary key is `primaryKey`
    /// (`.objectId`, `.string`, `.int64` or a UUID as binary subtype 4).
    ///
    /// ```swift
    /// let settings = try store.read { try $0.object("Settings", primaryKey: .string("main")) }
    /// ```
    public func object(_ className: String, primaryKey: BSON) throws(LocalStoreError) -> LocalStoreRow? {
        try access.object(className, primaryKey: primaryKey)
    }

    /// The object of `className` stored in row `rowID`.
    public func object(_ className: String, rowID: Int64) throws(LocalStoreError) -> LocalStoreRow? {
        try access.object(className, rowID: rowID)
    }

    /// The objects `query` selects, in its order.
    public func objects(_ query: LocalQuery) throws(LocalStoreError) -> [LocalStoreRow] {
        try access.objects(query)
    }

    /// How many objects `query` selects (counted by SQLite).
    public func count(_ query: LocalQuery) throws(LocalStoreError) -> Int {
        try access.count(query)
    }
}
