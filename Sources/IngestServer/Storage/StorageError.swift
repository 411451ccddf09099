/// A failure of the server's state database, with the SQLite result code
/// and the database file.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The database could not be opened or configured.
        public static let open = Code(rawValue: "open")
        /// A statement failed to prepare or run.
        public static let statement = Code(rawValue: "statement")
        /// A uniqueness constraint rejected a write.
        public static let constraint = Code(rawValue: "constraint")
        /// The database was already closed.
        public static let closed = Code(rawValue: "closed")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The SQLite result code, if SQLite reported one.
    public var sqliteCode: Int32?
    /// The database file.
    public var path: String

    public init(_ code: Code, _ message: String, sqliteCode: Int32? = nil, path: String) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
        self.path = path
    }

    public var description: String {
        "StorageError(\(code.rawValue)\(sqliteCode.map { ", SQLite \($0)" } ?? "")) in \(path): \(message)"
    }
}
