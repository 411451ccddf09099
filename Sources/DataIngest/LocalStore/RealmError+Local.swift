import IngestCore

extension RealmError.Code {
    // Local realms
    /// The local realm's schema changed in a way that would lose data.
    public static let destructiveMigration = RealmError.Code(rawValue: "destructiveMigration")
    /// The local realm's schema changed without a higher `schemaVersion`,
    /// or the file is newer than the configuration.
    public static let schemaVersionMismatch = RealmError.Code(rawValue: "schemaVersionMismatch")
    /// A predicate or sort that cannot be parsed or names an unusable property.
    public static let invalidQuery = RealmError.Code(rawValue: "invalidQuery")
    /// A managed object was changed outside a write transaction.
    public static let modifiedOutsideWriteTransaction = RealmError.Code(rawValue: "modifiedOutsideWriteTransaction")
    /// An operation on an object that this realm does not manage.
    public static let objectNotManaged = RealmError.Code(rawValue: "objectNotManaged")
    /// The local realm's SQLite store failed (see the underlying ``LocalStoreError``).
    public static let localStoreFailed = RealmError.Code(rawValue: "localStoreFailed")
}

extension RealmError {
    /// The realm error for an error of the local store, keeping its message
    /// and context; the store's error is `underlyingError`.
    init(local error: LocalStoreError) {
        let code: Code
        switch error.code {
        case .destructiveMigration: code = .destructiveMigration
        case .schemaVersionMismatch: code = .schemaVersionMismatch
        case .duplicatePrimaryKey: code = .duplicatePrimaryKey
        case .invalidPredicate, .invalidProperty: code = .invalidQuery
        case .invalidDocument: code = .wrongValueType
        case .unknownClass: code = .typeNotInRealm
        case .nestedWrite: code = .nestedWriteTransaction
        default: code = .localStoreFailed
        }
        self.init(
            code, className: error.className, propertyName: error.propertyName, fileURL: error.fileURL,
            message: error.message, underlyingError: error)
    }
}
