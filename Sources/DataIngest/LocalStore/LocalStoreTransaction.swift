import IngestCore

/// The writes (and reads) of one write transaction of a ``LocalStore``,
/// inside ``LocalStore/write(_:)``. Reads see the transaction's own writes.
/// Valid only inside the closure.
public struct LocalStoreTransaction {
    let access: LocalStoreAccess

    // MARK: Reading

    /// See ``LocalStoreReader/object(_:primaryKey:)``.
    public func object(_ className: String, primaryKey: BSON) throws(LocalStoreError) -> LocalStoreRow? {
        try access.object(className, primaryKey: primaryKey)
    }

    /// See ``LocalStoreReader/object(_:rowID:)``.
    public func object(_ className: String, rowID: Int64) throws(LocalStoreError) -> LocalStoreRow? {
        try access.object(className, rowID: rowID)
    }

    /// See ``LocalStoreReader/objects(_:)``.
    public func objects(_ query: LocalQuery) throws(LocalStoreError) -> [LocalStoreRow] {
        try access.objects(query)
    }

    /// See ``LocalStoreReader/count(_:)``.
    public func count(_ query: LocalQuery) throws(LocalStoreError) -> Int {
        try access.count(query)
    }

    // MARK: Writing

    /// Adds a new object; returns its rowID. The document is validated
    /// against the class's schema (every required property present, each
    /// value of its property's type). Throws
    /// ``LocalStoreError/Code/duplicatePrimaryKey`` if the key exists.
    ///
    /// ```swift
    /// try transaction.insert(["_id": .objectId(ObjectId.generate()), "title": .string("Buy milk")], into: "Task")
    /// ```
    @discardableResult
    public func insert(_ document: BSONDocument, into className: String) throws(LocalStoreError) -> Int64 {
        try access.insert(document, into: className, replacing: false)
    }

    /// Adds the object, or replaces every property of the object with the
    /// same primary key; returns its rowID. The class needs a primary key.
    @discardableResult
    public func upsert(_ document: BSONDocument, into className: String) throws(LocalStoreError) -> Int64 {
        try access.insert(document, into: className, replacing: true)
    }

    /// Sets the given properties of the object with `primaryKey`; the
    /// others keep their values. Returns whether the object exists. The
    /// primary key itself cannot be changed.
    ///
    /// ```swift
    /// try transaction.update("Task", primaryKey: .objectId(id), set: ["done": .bool(true)])
    /// ```
    @discardableResult
    public func update(_ className: String, primaryKey: BSON, set fields: BSONDocument) throws(LocalStoreError) -> Bool {
        try access.update(className, where: try access.primaryKeyCondition(className, primaryKey), fields: fields) > 0
    }

    /// Sets the given properties of the object in row `rowID`.
    @discardableResult
    public func update(_ className: String, rowID: Int64, set fields: BSONDocument) throws(LocalStoreError) -> Bool {
        try access.update(className, where: SQLFragment(sql: " WHERE rowid = ?", values: [.integer(rowID)]), fields: fields) > 0
    }

    /// Deletes the object with `primaryKey`; returns whether it existed.
    @discardableResult
    public func delete(_ className: String, primaryKey: BSON) throws(LocalStoreError) -> Bool {
        try access.delete(className, where: try access.primaryKeyCondition(className, primaryKey)) > 0
    }

    /// Deletes the object in row `rowID`; returns whether it existed.
    @discardableResult
    public func delete(_ className: String, rowID: Int64) throws(LocalStoreError) -> Bool {
        try access.delete(className, where: SQLFragment(sql: " WHERE rowid = ?", values: [.integer(rowID)])) > 0
    }

    /// Deletes every object `query` selects; returns how many.
    @discardableResult
    public func delete(_ query: LocalQuery) throws(LocalStoreError) -> Int {
        try access.delete(query)
    }
}
