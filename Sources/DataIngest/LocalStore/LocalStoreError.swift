import Foundation

/// An error of a local (non-synced) realm's SQLite store. The message says
/// what happened and what to do; `className`, `propertyName`, `fileURL` and
/// `sqliteCode` carry the context.
///
/// ```swift
/// do {
///     let store = try LocalStore(fileURL: url, schema: schema, schemaVersion: 2)
/// } catch let error as LocalStoreError where error.code == .destructiveMigration {
///     print(error.className ?? "", error.propertyName ?? "", error.message)
/// }
/// ```
public struct LocalStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file could not be opened or is not a usable database.
        public static let openFailed = Code(rawValue: "openFailed")
        /// The file cannot use write-ahead logging (WAL).
        public static let walUnavailable = Code(rawValue: "walUnavailable")
        /// SQLite reported an error (see ``LocalStoreError/sqliteCode``).
        public static let sqlite = Code(rawValue: "sqlite")
        /// The store was closed.
        public static let closed = Code(rawValue: "closed")
        /// The schema changed in a way that would lose data: a removed
        /// property, a changed type, a changed primary key.
        public static let destructiveMigration = Code(rawValue: "destructiveMigration")
        /// The schema changed but `schemaVersion` did not increase, or the
        /// file has a newer schema version than the configuration.
        public static let schemaVersionMismatch = Code(rawValue: "schemaVersionMismatch")
        /// The file's stored metadata cannot be read.
        public static let corruptMetadata = Code(rawValue: "corruptMetadata")
        /// A class the store does not hold (unknown, embedded or asymmetric).
        public static let unknownClass = Code(rawValue: "unknownClass")
        /// A property the class does not have, or one that cannot be used
        /// where it was used (a query on a list, for example).
        public static let invalidProperty = Code(rawValue: "invalidProperty")
        /// A document that does not match its class's schema.
        public static let invalidDocument = Code(rawValue: "invalidDocument")
        /// An object with this primary key already exists.
        public static let duplicatePrimaryKey = Code(rawValue: "duplicatePrimaryKey")
        /// The operation needs a primary key the class does not have.
        public static let missingPrimaryKey = Code(rawValue: "missingPrimaryKey")
        /// A predicate string that cannot be parsed, or a value of the wrong
        /// type for its property.
        public static let invalidPredicate = Code(rawValue: "invalidPredicate")
        /// A stored value cannot be read as its property's type.
        public static let corruptValue = Code(rawValue: "corruptValue")
        /// `write` was called inside a `write` on the same thread.
        public static let nestedWrite = Code(rawValue: "nestedWrite")
    }

    /// What went wrong.
    public var code: Code
    /// The class concerned, if any.
    public var className: String?
    /// The property concerned, if any.
    public var propertyName: String?
    /// The database file, if known.
    public var fileURL: URL?
    /// The SQLite result code (extended), if SQLite reported the error.
    public var sqliteCode: Int32?
    /// What happened and what to do.
    public var message: String

    /// Creates an error.
    public init(
        _ code: Code, className: String? = nil, propertyName: String? = nil, fileURL: URL? = nil,
        sqliteCode: Int32? = nil, message: String
    ) {
        self.code = code
        self.className = className
        self.propertyName = propertyName
        self.fileURL = fileURL
        self.sqliteCode = sqliteCode
        self.message = message
    }

    public var description: String { message }
}

extension LocalStoreError: LocalizedError {
    public var errorDescription: String? { message }
}
