import IngestSupport

/// The state database on SQLite: the one SQLite layer's connection
/// (IngestSupport/SQLite), in WAL mode with `synchronous=FULL` and foreign
/// keys, its failures as ``StorageError``. Its owner (``StateStore``)
/// serializes every use with a lock.
extension SQLiteConnection: StateDatabase {
    /// Opens (creating if needed) the state database in WAL mode.
    ///
    /// - Throws: ``StorageError`` `.open` if the file cannot be opened or WAL
    ///   cannot be enabled (for example on a file system without shared memory).
    static func stateDatabase(path: String) throws(StorageError) -> SQLiteConnection {
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, options: .init(access: .readWriteCreate, busyTimeoutMilliseconds: 5000))
        } catch {
            throw StorageError(error)
        }
        do throws(StorageError) {
            // journal_mode answers with the mode in effect: check it really is WAL.
            let wal: (enabled: Bool, journalMode: String?)
            do { wal = try connection.enableWAL() } catch { throw StorageError(error) }
            guard wal.enabled else {
                throw StorageError(
                    .open,
                    "the state database could not switch to WAL (journal mode is \(wal.journalMode ?? "unknown")); "
                        + "put the state directory on a local file system", path: path)
            }
            try connection.execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Runs one or more statements without parameters or results.
    func execute(_ sql: String) throws(StorageError) {
        do { try execute(sql: sql) } catch { throw StorageError(error) }
    }

    @discardableResult
    func query(_ sql: String, _ arguments: [SQLiteValue]) throws(StorageError) -> [[SQLiteValue]] {
        do { return try rows(sql: sql, arguments: arguments) } catch { throw StorageError(error) }
    }

    /// Runs `body` in an IMMEDIATE transaction; rolls back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(.immediate, mapError: { StorageError($0) as any Error }, body)
    }
}

extension StorageError {
    /// The state store's error for a failure of its SQLite connection. The
    /// code is SQLite's primary result code.
    init(_ error: SQLiteError) {
        switch error.operation {
        case .open:
            self.init(.open, "cannot open the state database: \(error.message)", sqliteCode: error.resultCode, path: error.path)
        case .closed:
            self.init(.closed, "the state database is closed", path: error.path)
        case .execute:
            self.init(.statement, error.message, sqliteCode: error.resultCode, path: error.path)
        case .prepare, .bind, .step:
            self.init(
                error.isConstraint ? .constraint : .statement, "\(error.message) (in: \(error.sql?.prefix(80) ?? ""))",
                sqliteCode: error.resultCode, path: error.path)
        }
    }
}
