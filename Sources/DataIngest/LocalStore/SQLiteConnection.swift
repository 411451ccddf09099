import CSQLite
import Foundation

/// One SQLite connection with its cache of prepared statements.
///
/// Not thread-safe by itself: a connection is always owned by one
/// serializer at a time (the store's writer semaphore, or a reader checked
/// out of the pool), which is why SQLite is opened with `NOMUTEX`.
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]
    let fileURL: URL

    /// Opens (and creates, if `create`) the database at `fileURL`.
    init(fileURL: URL, create: Bool, busyTimeoutMilliseconds: Int32) throws(LocalStoreError) {
        self.fileURL = fileURL
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        if create { flags |= SQLITE_OPEN_CREATE }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(fileURL.path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let detail = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw LocalStoreError(
                .openFailed, fileURL: fileURL, sqliteCode: rc,
                message: "cannot open the local realm file \(fileURL.path): \(detail); check that the directory exists and is writable")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        _ = dataingest_sqlite_db_config_defensive(db, 1)
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the connection. Safe to
    /// call twice.
    func close() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    var isOpen: Bool { handle != nil }

    private func database() throws(LocalStoreError) -> OpaquePointer {
        guard let handle else {
            throw LocalStoreError(.closed, fileURL: fileURL, message: "the local realm file \(fileURL.path) is closed; open it again")
        }
        return handle
    }

    /// The error for result code `rc` with SQLite's message.
    func error(_ rc: Int32, _ what: String) -> LocalStoreError {
        let detail = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        return LocalStoreError(.sqlite, fileURL: fileURL, sqliteCode: rc, message: "\(what) failed in \(fileURL.lastPathComponent): \(detail) (SQLite code \(rc))")
    }

    /// Runs SQL without results (several statements allowed). Only for
    /// fixed SQL built from validated identifiers: values are never spliced.
    func execute(_ sql: String) throws(LocalStoreError) {
        let db = try database()
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let detail = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw LocalStoreError(.sqlite, fileURL: fileURL, sqliteCode: rc, message: "\(sql.prefix(80)) failed in \(fileURL.lastPathComponent): \(detail) (SQLite code \(rc))")
        }
    }

    /// The cached prepared statement for `sql`, reset and with no bindings.
    func statement(_ sql: String) throws(LocalStoreError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let db = try database()
        var pointer: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard rc == SQLITE_OK, let pointer else { throw error(rc, "preparing \(sql.prefix(80))") }
        let statement = SQLiteStatement(pointer, connection: self)
        // Bounded: query shapes come from the schema and the app's predicates.
        if statements.count >= 256 {
            for old in statements.values { old.finalize() }
            statements.removeAll()
        }
        statements[sql] = statement
        return statement
    }

    /// Runs `sql` with `values` and returns every row.
    func rows(_ sql: String, _ values: [SQLValue] = []) throws(LocalStoreError) -> [[SQLValue]] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var result: [[SQLValue]] = []
        while try statement.step() {
            result.append(statement.row())
        }
        return result
    }

    /// Runs `sql` with `values`, ignoring rows; returns the number of rows changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLValue] = []) throws(LocalStoreError) -> Int {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {}
        return Int(sqlite3_changes(try database()))
    }

    var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// Whether a transaction is open on this connection.
    var inTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }
}

/// A prepared statement; finalized by its connection (close) or in deinit.
final class SQLiteStatement {
    private var pointer: OpaquePointer?
    private unowned let connection: SQLiteConnection

    init(_ pointer: OpaquePointer, connection: SQLiteConnection) {
        self.pointer = pointer
        self.connection = connection
    }

    deinit { finalize() }

    func finalize() {
        if let pointer { sqlite3_finalize(pointer) }
        pointer = nil
    }

    func reset() {
        guard let pointer else { return }
        sqlite3_reset(pointer)
        sqlite3_clear_bindings(pointer)
    }

    func bind(_ values: [SQLValue]) throws(LocalStoreError) {
        guard let pointer else { throw connection.error(SQLITE_MISUSE, "binding a finalized statement") }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(pointer, index)
            case .integer(let number):
                rc = sqlite3_bind_int64(pointer, index, number)
            case .real(let number):
                rc = sqlite3_bind_double(pointer, index, number)
            case .text(let text):
                var text = text
                // With the byte count, so text containing NUL is stored whole.
                rc = text.withUTF8 { utf8 -> Int32 in
                    guard let base = utf8.baseAddress, utf8.count > 0 else {
                        return sqlite3_bind_text(pointer, index, "", 0, dataingest_sqlite_transient())
                    }
                    return UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: utf8.count) { chars in
                        sqlite3_bind_text(pointer, index, chars, Int32(utf8.count), dataingest_sqlite_transient())
                    }
                }
            case .blob(let bytes):
                rc = bytes.withUnsafeBytes { buffer in
                    // A zero-length blob still needs a non-null pointer to be a blob, not NULL.
                    sqlite3_bind_blob(pointer, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), dataingest_sqlite_transient())
                }
            }
            if rc != SQLITE_OK { throw connection.error(rc, "binding parameter \(index)") }
        }
    }

    /// Advances; returns whether a row is available.
    func step() throws(LocalStoreError) -> Bool {
        guard let pointer else { throw connection.error(SQLITE_MISUSE, "stepping a finalized statement") }
        let rc = sqlite3_step(pointer)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let sql = sqlite3_sql(pointer).map { String(cString: $0) } ?? ""
            throw connection.error(rc, String(sql.prefix(80)))
        }
    }

    /// The current row's values.
    func row() -> [SQLValue] {
        guard let pointer else { return [] }
        let count = sqlite3_column_count(pointer)
        var values: [SQLValue] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count {
            switch sqlite3_column_type(pointer, column) {
            case SQLITE_INTEGER:
                values.append(.integer(sqlite3_column_int64(pointer, column)))
            case SQLITE_FLOAT:
                values.append(.real(sqlite3_column_double(pointer, column)))
            case SQLITE_TEXT:
                let count = Int(sqlite3_column_bytes(pointer, column))
                if count > 0, let base = sqlite3_column_text(pointer, column) {
                    values.append(.text(String(decoding: UnsafeRawBufferPointer(start: base, count: count), as: UTF8.self)))
                } else {
                    values.append(.text(""))
                }
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(pointer, column))
                if count > 0, let base = sqlite3_column_blob(pointer, column) {
                    values.append(.blob(Array(UnsafeRawBufferPointer(start: base, count: count))))
                } else {
                    values.append(.blob([]))
                }
            default:
                values.append(.null)
            }
        }
        return values
    }
}
