import CSQLite

/// A failure SQLite reported (or a use of a closed connection), with the
/// result code, SQLite's own message, the statement's SQL and the file.
///
/// The one error of the SQLite layer. Each module maps it to the error its
/// users see (`LocalStoreError`, `StorageError`, `SinkError`), keeping its
/// own wording; ``operation`` says which call failed, for those messages.
///
/// ```swift
/// do {
///     try connection.execute(sql: "INSERT INTO t VALUES (1)")
/// } catch where error.resultCode == SQLITE_CONSTRAINT {
///     print(error.extendedResultCode, error.message, error.sql ?? "")
/// }
/// ```
// Public, with package members, for SQLiteStatement's @inlinable binds (see there).
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call that failed.
    public enum Operation: Sendable, Hashable {
        /// `sqlite3_open_v2`.
        case open
        /// Preparing ``SQLiteError/sql``.
        case prepare
        /// Binding the parameter at this 1-based index.
        case bind(parameter: Int32)
        /// Stepping the statement ``SQLiteError/sql``.
        case step
        /// `sqlite3_exec` of ``SQLiteError/sql`` (one or more statements).
        case execute
        /// The connection (or the statement's connection) was closed.
        case closed
    }

    /// The extended result code (`SQLITE_CONSTRAINT_PRIMARYKEY` is 1555):
    /// every connection enables extended codes.
    package var extendedResultCode: Int32
    /// The primary result code (`SQLITE_CONSTRAINT` is 19): the low byte of
    /// ``extendedResultCode``.
    package var resultCode: Int32 { extendedResultCode & 0xFF }
    /// SQLite's message (`sqlite3_errmsg`, or the error string of the code).
    package var message: String
    /// The SQL that failed, if a statement did.
    package var sql: String?
    /// Which call failed.
    package var operation: Operation
    /// The database file.
    package var path: String

    package init(_ operation: Operation, code: Int32, message: String, sql: String? = nil, path: String) {
        self.operation = operation
        self.extendedResultCode = code
        self.message = message
        self.sql = sql
        self.path = path
    }

    /// A row's primary key is already in its table (`SQLITE_CONSTRAINT_PRIMARYKEY`).
    package var isPrimaryKeyViolation: Bool { extendedResultCode == SQLITE_CONSTRAINT | 6 << 8 }
    /// Another connection holds a lock (`SQLITE_BUSY`, `SQLITE_LOCKED`): retrying later may succeed.
    package var isBusy: Bool { resultCode == SQLITE_BUSY || resultCode == SQLITE_LOCKED }
    /// The disk or the database is full (`SQLITE_FULL`).
    package var isFull: Bool { resultCode == SQLITE_FULL }
    /// A constraint (unique, primary key, foreign key, check, not null) refused a write.
    package var isConstraint: Bool { resultCode == SQLITE_CONSTRAINT }

    public var description: String {
        var text = "SQLite error \(extendedResultCode) in \(path): \(message)"
        if let sql { text += " (in: \(sql.prefix(80)))" }
        return text
    }

    /// The error of `code` on `db`, with its current message.
    static func failure(_ operation: Operation, _ code: Int32, db: OpaquePointer?, sql: String?, path: String) -> SQLiteError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return SQLiteError(operation, code: code, message: message, sql: sql, path: path)
    }

    /// The error for a connection or statement used after ``SQLiteConnection/close()``.
    static func closed(sql: String? = nil, path: String) -> SQLiteError {
        SQLiteError(.closed, code: SQLITE_MISUSE, message: "the database connection is closed", sql: sql, path: path)
    }
}
