import CSQLite

/// One SQLite connection with its cache of prepared statements: the
/// project's one SQLite layer (local realms, the server's state database,
/// the SQLite sink, and the tests' and benchmarks' readers all use it).
///
/// Not thread-safe by itself, and not `Sendable`: a connection is always
/// owned by one serializer at a time (the local store's writer semaphore or
/// a reader checked out of its pool, the state store's lock, the sink's
/// lock), which is why SQLite is opened with `NOMUTEX`. Every connection
/// uses extended result codes, a busy timeout and SQLite's defensive mode.
/// Statements from ``cachedStatement(sql:)`` are kept (up to
/// ``Options/statementCacheLimit``) until ``close()``, which `deinit` calls
/// as a safety net; each statement is finalized in its own `deinit`.
///
/// ```swift
/// let db = try SQLiteConnection(path: "/tmp/example.sqlite")
/// guard try db.enableWAL().enabled else { … }
/// try db.execute(sql: "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, name TEXT)")
/// try db.run(sql: "INSERT INTO t (name) VALUES (?)", arguments: [.text("a")])
/// let rows = try db.rows(sql: "SELECT id, name FROM t")   // [[.integer(1), .text("a")]]
/// db.close()
/// ```
package final class SQLiteConnection {
    /// How a connection is opened, each setting with its default.
    package struct Options: Sendable {
        /// Whether the connection may write, and may create the file.
        package enum Access: Sendable {
            case readOnly
            case readWrite
            case readWriteCreate
        }

        /// Default ``Access/readWriteCreate``.
        package var access: Access = .readWriteCreate
        /// Milliseconds to wait for a lock another connection holds before
        /// failing with `SQLITE_BUSY`. Default 5000.
        package var busyTimeoutMilliseconds: Int32 = 5000
        /// How many prepared statements ``cachedStatement(sql:)`` keeps;
        /// when full, the cache is emptied (statements still in use stay
        /// valid until released). Default 256.
        package var statementCacheLimit = 256

        package init(access: Access = .readWriteCreate, busyTimeoutMilliseconds: Int32 = 5000, statementCacheLimit: Int = 256) {
            self.access = access
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.statementCacheLimit = statementCacheLimit
        }
    }

    /// The kinds of `BEGIN`.
    package enum TransactionKind: String, Sendable {
        /// Takes locks when the first statement needs them.
        case deferred = "BEGIN"
        /// Takes the write lock at once (waiting up to the busy timeout).
        case immediate = "BEGIN IMMEDIATE"
    }

    /// The database file.
    package let path: String
    private let options: Options
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (and, with ``Options/Access/readWriteCreate``, creates) the database at `path`.
    package init(path: String, options: Options = Options()) throws(SQLiteError) {
        self.path = path
        self.options = options
        var flags = SQLITE_OPEN_NOMUTEX
        switch options.access {
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let error = SQLiteError.failure(.open, rc, db: db, sql: nil, path: path)
            if let db { sqlite3_close_v2(db) }
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, options.busyTimeoutMilliseconds)
        _ = dataingest_sqlite_db_config_defensive(db, 1)
    }

    deinit { close() }

    /// Releases the cached statements (finalizing them) and closes the
    /// connection. Safe to call twice; later calls on the connection throw
    /// an error with operation ``SQLiteError/Operation/closed``.
    package func close() {
        statements.removeAll()
        // close_v2: a statement still held elsewhere keeps the connection's
        // memory until that statement is finalized (its deinit).
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Whether ``close()`` has not been called.
    package var isOpen: Bool { handle != nil }

    private func database(_ sql: String? = nil) throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError.closed(sql: sql, path: path) }
        return handle
    }

    // MARK: Statements

    /// Runs SQL without results (several statements allowed). Only for
    /// fixed SQL built from validated identifiers: values are never spliced.
    package func execute(sql: String) throws(SQLiteError) {
        let db = try database(sql)
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let detail = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw SQLiteError(.execute, code: rc, message: detail, sql: sql, path: path)
        }
    }

    /// The cached prepared statement for `sql`, reset and with no bindings.
    package func cachedStatement(sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let statement = try prepare(sql, flags: UInt32(SQLITE_PREPARE_PERSISTENT))
        // Bounded: query shapes come from schemas and the app's predicates.
        if statements.count >= options.statementCacheLimit { statements.removeAll() }
        statements[sql] = statement
        return statement
    }

    /// A new prepared statement for `sql`, not cached: finalized when released.
    package func makeStatement(sql: String) throws(SQLiteError) -> SQLiteStatement {
        try prepare(sql, flags: 0)
    }

    /// Drops the cached statement for `sql` (after a schema change made it
    /// useless); it is finalized when released.
    package func forgetStatement(sql: String) {
        statements.removeValue(forKey: sql)
    }

    private func prepare(_ sql: String, flags: UInt32) throws(SQLiteError) -> SQLiteStatement {
        let db = try database(sql)
        var pointer: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, flags, &pointer, nil)
        guard rc == SQLITE_OK, let pointer else { throw SQLiteError.failure(.prepare, rc, db: db, sql: sql, path: path) }
        return SQLiteStatement(pointer, sql: sql, path: path)
    }

    /// Runs `sql` (cached) with `arguments` and returns every row.
    package func rows(sql: String, arguments: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        let statement = try cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        var result: [[SQLiteValue]] = []
        while try statement.step() {
            result.append(statement.row())
        }
        return result
    }

    /// Runs `sql` (cached) with `arguments`, ignoring rows; returns the
    /// number of rows changed.
    @discardableResult
    package func run(sql: String, arguments: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        let statement = try cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        while try statement.step() {}
        return changes
    }

    /// The number of rows changed by the last INSERT, UPDATE or DELETE.
    package var changes: Int {
        handle.map { Int(sqlite3_changes($0)) } ?? 0
    }

    /// The most parameters one statement may have (`SQLITE_LIMIT_VARIABLE_NUMBER`;
    /// 32,766 in SQLite's default build since 3.32), 0 when closed.
    package var parameterLimit: Int {
        handle.map { Int(sqlite3_limit($0, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) } ?? 0
    }

    /// The rowid of the last successful INSERT.
    package var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    // MARK: Journal mode

    /// Switches the database to write-ahead logging and checks that it did:
    /// `PRAGMA journal_mode=WAL` answers with the mode in effect, which
    /// stays the old one where WAL cannot work (a file system without
    /// shared memory, an in-memory database).
    ///
    /// - Returns: whether WAL is in effect, and the journal mode SQLite
    ///   answered (`nil` if it answered nothing).
    package func enableWAL() throws(SQLiteError) -> (enabled: Bool, journalMode: String?) {
        let statement = try makeStatement(sql: "PRAGMA journal_mode=WAL")
        var mode: String?
        while try statement.step() {
            if mode == nil, statement.columnType(at: 0) != .null { mode = statement.text(at: 0) }
        }
        return (mode?.lowercased() == "wal", mode)
    }

    // MARK: Transactions

    /// Whether a transaction is open on this connection.
    package var isInTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// Opens a transaction. Pair with ``commit()`` or ``rollback()``.
    package func begin(_ kind: TransactionKind = .deferred) throws(SQLiteError) {
        try execute(sql: kind.rawValue)
    }

    /// Commits the open transaction.
    package func commit() throws(SQLiteError) {
        try execute(sql: "COMMIT")
    }

    /// Rolls the open transaction back, if one is open (a failed COMMIT or
    /// statement may have ended it already).
    package func rollback() {
        if isInTransaction { try? execute(sql: "ROLLBACK") }
    }

    /// Runs `body` in a transaction and commits it; if `body` or the commit
    /// throws, rolls back and rethrows. SQLite's own failures (BEGIN,
    /// COMMIT) are thrown as `mapError` makes them, so that `body` and the
    /// transaction throw one error type.
    ///
    /// ```swift
    /// try db.transaction(.immediate, mapError: { StorageError($0) }) { () throws(StorageError) in … }
    /// ```
    package func transaction<T, E: Error>(
        _ kind: TransactionKind = .deferred, mapError: (SQLiteError) -> E, _ body: () throws(E) -> T
    ) throws(E) -> T {
        do throws(SQLiteError) { try begin(kind) } catch { throw mapError(error) }
        do throws(E) {
            let result = try body()
            do throws(SQLiteError) { try commit() } catch { throw mapError(error) }
            return result
        } catch {
            rollback()
            throw error
        }
    }
}

// Owned by one serializer at a time; never shared between threads.
@available(*, unavailable)
extension SQLiteConnection: Sendable {}

extension SQLiteConnection {
    /// Turns SQLite's memory statistics off for the whole process: with
    /// them on (Debian's default) every SQLite allocation takes a
    /// process-wide mutex. Call it before the first connection opens, while
    /// the process has one thread; afterwards SQLite refuses the change.
    ///
    /// - Returns: whether SQLite accepted it.
    @discardableResult
    package static func disableMemoryStatistics() -> Bool {
        dataingest_sqlite_config_memstatus(0) == SQLITE_OK
    }
}
