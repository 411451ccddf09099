/// A failure of the server's state database, with the SQLite result code
/// and the database file.
package struct StorageError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The database could not be opened or configured.
        package static let open = Code(rawValue: "open")
        /// A statement failed to prepare or run.
        package static let statement = Code(rawValue: "statement")
        /// A uniqueness constraint rejected a write.
        package static let constraint = Code(rawValue: "constraint")
        /// The database was already closed.
        package static let closed = Code(rawValue: "closed")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do.
    package var message: String
    /// The SQLite result code, if SQLite reported one.
    package var sqliteCode: Int32?
    /// The database file.
    package var path: String

    package init(_ code: Code, _ message: String, sqliteCode: Int32? = nil, path: String) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
        self.path = path
    }

    package var description: String {
        "StorageError(\(code.rawValue)\(sqliteCode.map { ", SQLite \($0)" } ?? "")) in \(path): \(message)"
    }
}
