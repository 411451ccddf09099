import IngestCore

/// An object a changeset created, as the document DataIngest stores: the
/// same BSON types the Swift SDK writes for the same schema.
///
/// ```swift
/// for object in result.objects { print(object.className, object.document) }
/// ```
public struct IngestedObject: Sendable, Hashable {
    /// The class (table, collection) name.
    public var className: String
    /// The object's primary key as the changeset named it.
    public var primaryKey: PrimaryKey
    /// The document's BSON encoding, fields in schema order (unknown fields
    /// after them): written straight from the changeset, so that the server
    /// stores it without building a ``BSONDocument`` first.
    public var bson: [UInt8]

    /// The document (decoded from ``bson``).
    public var document: BSONDocument {
        // The ingestor's own encoding: it always decodes.
        (try? BSONDocument(bson: bson)) ?? BSONDocument()
    }

    /// An object from its encoded document.
    public init(className: String, primaryKey: PrimaryKey, bson: [UInt8]) {
        self.className = className
        self.primaryKey = primaryKey
        self.bson = bson
    }

    /// An object from its document.
    public init(className: String, primaryKey: PrimaryKey, document: BSONDocument) {
        self.init(className: className, primaryKey: primaryKey, bson: document.bsonBytes())
    }
}

/// An object whose values cannot be stored as BSON (a date beyond BSON's
/// range): never dropped silently, it is reported to the client and kept
/// for an operator.
public struct RejectedObject: Sendable, Hashable {
    /// The class name.
    public var className: String
    /// The object's primary key.
    public var primaryKey: PrimaryKey
    /// Why it was rejected, naming the field.
    public var reason: String

    /// A rejected object.
    public init(className: String, primaryKey: PrimaryKey, reason: String) {
        self.className = className
        self.primaryKey = primaryKey
        self.reason = reason
    }
}

/// What one changeset yields.
public struct ChangesetIngestResult: Sendable, Hashable {
    /// The objects it created, in the order it created them.
    public var objects: [IngestedObject]
    /// Objects it created whose values cannot be stored.
    public var rejected: [RejectedObject]
    /// Whether it declared tables or columns the schema did not have (in
    /// development mode; ``ChangesetIngestor/schema`` has them now).
    public var schemaChanged: Bool

    /// A result.
    public init(objects: [IngestedObject] = [], rejected: [RejectedObject] = [], schemaChanged: Bool = false) {
        self.objects = objects
        self.rejected = rejected
        self.schemaChanged = schemaChanged
    }
}
