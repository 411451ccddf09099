import IngestCore

/// One stored object: its SQLite rowid and its document (every property of
/// its class, in declaration order; absent optionals as null, absent
/// collections empty).
///
/// ```swift
/// if let row = try store.read({ try $0.object("Settings", primaryKey: .string("main")) }) {
///     print(row.rowID, row.document["theme"] ?? .null)
/// }
/// ```
public struct LocalStoreRow: Sendable, Hashable {
    /// The SQLite rowid: stable for the life of the row (DataIngest never
    /// runs VACUUM), the identity of objects of classes without a primary key.
    public var rowID: Int64
    /// The object's properties.
    public var document: BSONDocument

    /// Creates a row.
    public init(rowID: Int64, document: BSONDocument) {
        self.rowID = rowID
        self.document = document
    }
}
