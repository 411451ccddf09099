import IngestSupport

/// The SQL connection a ``StateStore`` runs its statements on: SQLite (one
/// server) or PostgreSQL (state shared by several ingest servers).
///
/// Statements are written once, in the dialect both accept: `?`
/// placeholders, `INSERT OR IGNORE` (rewritten for PostgreSQL), integer
/// times, blobs for hashes.
///
/// ```swift
/// let rows = try db.query("SELECT id FROM users WHERE app_id = ?", [.text("a1")])
/// ```
protocol StateDatabase: AnyObject {
    /// Runs one statement with `?` parameters and returns its rows.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLiteValue]) throws(StorageError) -> [[SQLiteValue]]
    /// Rows changed by the last statement.
    var changes: Int { get }
    /// Runs `body` in a transaction; rolls back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Closes the connection.
    func close()
}

extension StateDatabase {
    /// ``query(_:_:)`` without parameters.
    @discardableResult
    func query(_ sql: String) throws(StorageError) -> [[SQLiteValue]] { try query(sql, []) }
}
