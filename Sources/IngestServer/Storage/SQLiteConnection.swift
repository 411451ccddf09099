import CSQLite

/// A value bound to or read from an SQLite statement.
enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var text: String? { if case .text(let value) = self { value } else { nil } }
    var blob: [UInt8]? { if case .blob(let value) = self { value } else { nil } }
}

/// One SQLite connection with a cache of prepared statements.
///
/// Not thread-safe: its owner (``StateStore``) serializes every use with a
/// lock. Statements are finalized in ``close()``, and `deinit` closes as a
/// safety net.
final class SQLiteConnection {
    let path: String
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating if needed) the database in WAL mode.
    ///
    /// - Throws: ``StorageError`` `.open` if the file cannot be opened or WAL
    ///   cannot be enabled (for example on a file system without shared memory).
    init(path: String) throws(StorageError) {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw StorageError(.open, "cannot open the state database: \(message)", sqliteCode: rc, path: path)
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        _ = dataingest_sqlite_db_config_defensive(db, 1)
        // journal_mode answers with the mode in effect: check it really is WAL.
        let mode = try query("PRAGMA journal_mode=WAL").first?.first?.text
        guard mode?.lowercased() == "wal" else {
            close()
            throw StorageError(.open, "the state database could not switch to WAL (journal mode is \(mode ?? "unknown")); "
                                   + "put the state directory on a local file system", path: path)
        }
        try execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the connection. Idempotent.
    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs one or more statements without parameters or results.
    func execute(_ sql: String) throws(StorageError) {
        guard let handle else { throw StorageError(.closed, "the state database is closed", path: path) }
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        guard rc == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(errorMessage)
            throw StorageError(.statement, message, sqliteCode: rc, path: path)
        }
    }

    /// Runs a statement and returns all result rows.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(StorageError) -> [[SQLiteValue]] {
        guard let handle else { throw StorageError(.closed, "the state database is closed", path: path) }
        let statement = try prepared(sql, handle: handle)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch argument {
            case .null: rc = sqlite3_bind_null(statement, index)
            case .integer(let value): rc = sqlite3_bind_int64(statement, index, value)
            case .text(let value): rc = sqlite3_bind_text(statement, index, value, -1, dataingest_sqlite_transient())
            case .blob(let value):
                rc = value.withUnsafeBytes {
                    sqlite3_bind_blob(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                      Int32($0.count), dataingest_sqlite_transient())
                }
            }
            guard rc == SQLITE_OK else { throw failure(rc, sql: sql) }
        }
        var rows: [[SQLiteValue]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw failure(rc, sql: sql) }
            var row: [SQLiteValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    let bytes = sqlite3_column_blob(statement, column)
                    row.append(.blob(count == 0 || bytes == nil ? [] : Array(UnsafeRawBufferPointer(start: bytes, count: count))))
                case SQLITE_FLOAT: row.append(.integer(Int64(sqlite3_column_double(statement, column))))
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// The number of rows changed by the last statement.
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Runs `body` in an IMMEDIATE transaction; rolls back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func prepared(_ sql: String, handle: OpaquePointer) throws(StorageError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc, sql: sql) }
        statements[sql] = statement
        return statement
    }

    private func failure(_ rc: Int32, sql: String) -> StorageError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        let code: StorageError.Code = (rc & 0xFF) == SQLITE_CONSTRAINT ? .constraint : .statement
        return StorageError(code, "\(message) (in: \(sql.prefix(80)))", sqliteCode: rc, path: path)
    }
}
