import Dispatch
import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport

/// The SQLite store of a local (non-synced) realm, keyed by the schema
/// model: one table per top-level class, typed columns, the schema and
/// `schemaVersion` in a metadata table, additive migration on open.
///
/// One writer connection serializes write transactions; reads run on
/// separate connections, so they proceed while a write is open (WAL mode)
/// and see the last committed state.
///
/// ```swift
/// let store = try LocalStore(fileURL: url, schema: schema, schemaVersion: 1)
/// try store.write { transaction in
///     try transaction.insert(["_id": .string("main"), "theme": .string("dark")], into: "Settings")
/// }
/// let dark = try store.read { try $0.count(LocalQuery("Settings").filter("theme == %@", "dark")) }
/// store.close()
/// ```
// @unchecked Sendable: `writer` is used only by the holder of `writerGate`;
// a reader connection only by the thread that checked it out of `state`;
// `state` is a LockedBox.
public final class LocalStore: @unchecked Sendable {
    /// Options of a store; every one has a default.
    public struct Configuration: Sendable {
        /// Idle reader connections kept open for reuse. Default: 4.
        public var maximumIdleReaders: Int
        /// How long a connection waits for a lock another process holds,
        /// in milliseconds. Default: 5000.
        public var busyTimeoutMilliseconds: Int32
        /// Whether each commit is synced to disk before it returns
        /// (`PRAGMA synchronous = FULL`). With `false` (NORMAL), a commit
        /// survives a crash of the process but the last ones may be lost on
        /// power loss. Default: `true`.
        public var fullDurability: Bool

        /// Creates a configuration.
        public init(maximumIdleReaders: Int = 4, busyTimeoutMilliseconds: Int32 = 5000, fullDurability: Bool = true) {
            self.maximumIdleReaders = maximumIdleReaders
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.fullDurability = fullDurability
        }
    }

    /// Table and index names starting with this are DataIngest's.
    static let reservedPrefix = "__dataingest"
    /// The metadata table: `key TEXT PRIMARY KEY, value`.
    static let metadataTable = "__dataingest_metadata"

    /// The database file.
    public let fileURL: URL
    /// The schema the store was opened with.
    public let schema: Schema
    /// The schema version the file now has.
    public let schemaVersion: UInt64
    /// The options it was opened with.
    public let configuration: Configuration

    let tables: [String: TableMapping]
    private let writer: SQLiteConnection
    // A semaphore, not a Lock: an async caller may end a write transaction
    // on another thread than the one that began it, which pthread forbids.
    private let writerGate = DispatchSemaphore(value: 1)
    private let state = LockedBox(State())

    private struct State {
        var idleReaders: [SQLiteConnection] = []
        var closed = false
        var writerThread: pthread_t?
    }

    /// Opens (or creates) the store at `fileURL` for `schema`.
    ///
    /// A new file gets a table per top-level class. An existing file is
    /// compared with `schema`: when `schemaVersion` is higher than the
    /// file's, additive changes are applied (new classes, new properties
    /// that are optional, collections, or have a value in `defaults`, index
    /// changes); a destructive change (a removed property, a changed type,
    /// optionality or primary key) throws ``LocalStoreError/Code/destructiveMigration``
    /// naming the class and property. Classes the file has but `schema`
    /// lacks are kept untouched.
    ///
    /// - Parameters:
    ///   - defaults: per class name, the values that fill a new required
    ///     property in existing rows (`["Settings": ["fontSize": .int64(12)]]`).
    public init(
        fileURL: URL, schema: Schema, schemaVersion: UInt64 = 0,
        defaults: [String: BSONDocument] = [:], configuration: Configuration = Configuration()
    ) throws(LocalStoreError) {
        self.fileURL = fileURL
        self.configuration = configuration
        for object in schema.objectSchemas where object.kind == .asymmetric {
            throw LocalStoreError(
                .unknownClass, className: object.className, fileURL: fileURL,
                message:
                    "\(object.className) is an asymmetric (upload-only) class and cannot be stored in a local realm; remove it from the local realm's objectTypes and write it in a synced realm"
            )
        }
        do {
            try schema.checkStructure(synced: false)
        } catch {
            throw LocalStoreError(
                .invalidProperty, className: error.className, propertyName: error.propertyName, fileURL: fileURL, message: error.message)
        }
        let writer = try SQLiteConnection.localRealm(
            at: fileURL, create: true, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds)
        do throws(LocalStoreError) {
            try Self.enableWAL(writer)
            try writer.execute("PRAGMA synchronous = \(configuration.fullDurability ? "FULL" : "NORMAL")")
            let migration = try Migration.run(on: writer, schema: schema, schemaVersion: schemaVersion, defaults: defaults)
            self.schema = schema
            self.schemaVersion = migration.schemaVersion
            var tables: [String: TableMapping] = [:]
            for object in schema.objectSchemas where object.kind == .topLevel {
                tables[object.className] = try TableMapping(object, in: schema)
            }
            self.tables = tables
        } catch {
            writer.close()
            throw error
        }
        self.writer = writer
    }

    deinit { close() }

    /// Closes every connection. Waits for an open write transaction to
    /// end; later calls throw ``LocalStoreError/Code/closed``. Calling it
    /// twice is harmless.
    public func close() {
        let alreadyClosed = state.withLock { state -> Bool in
            defer { state.closed = true }
            return state.closed
        }
        if alreadyClosed { return }
        writerGate.wait()
        writer.close()
        writerGate.signal()
        let idle = state.withLock { state -> [SQLiteConnection] in
            defer { state.idleReaders.removeAll() }
            return state.idleReaders
        }
        for reader in idle { reader.close() }
    }

    private static func enableWAL(_ connection: SQLiteConnection) throws(LocalStoreError) {
        let wal: (enabled: Bool, journalMode: String?)
        do { wal = try connection.enableWAL() } catch { throw LocalStoreError(error) }
        guard wal.enabled else {
            throw LocalStoreError(
                .walUnavailable, fileURL: connection.fileURL,
                message:
                    "\(connection.fileURL.path) cannot use write-ahead logging (journal mode is \(wal.journalMode.map { "'\($0)'" } ?? "unknown")); put the realm on a local file system that supports shared memory"
            )
        }
    }

    private func closedError() -> LocalStoreError {
        LocalStoreError(.closed, fileURL: fileURL, message: "the local realm store \(fileURL.lastPathComponent) is closed; open it again")
    }

    // MARK: Writing

    /// Runs `body` in a write transaction and commits it; if `body`
    /// throws, nothing is written and the error is rethrown. Write
    /// transactions run one at a time; reads on other threads continue.
    ///
    /// ```swift
    /// try store.write { transaction in
    ///     try transaction.upsert(["_id": .string("main"), "theme": .string("light")], into: "Settings")
    /// }
    /// ```
    @discardableResult
    public func write<Result>(_ body: (LocalStoreTransaction) throws -> Result) throws -> Result {
        try beginWriteTransaction()
        let result: Result
        do {
            result = try body(LocalStoreTransaction(access: writerAccess))
        } catch {
            rollbackWriteTransaction()
            throw error
        }
        try commitWriteTransaction()
        return result
    }

    var writerAccess: LocalStoreAccess {
        LocalStoreAccess(connection: writer, tables: tables, schema: schema)
    }

    /// Takes the writer and opens `BEGIN IMMEDIATE`. Pair with
    /// ``commitWriteTransaction()`` or ``rollbackWriteTransaction()``.
    func beginWriteTransaction() throws(LocalStoreError) {
        let me = pthread_self()
        let nested = state.withLock { state in state.writerThread.map { pthread_equal($0, me) != 0 } ?? false }
        if nested {
            throw LocalStoreError(
                .nestedWrite, fileURL: fileURL,
                message:
                    "a write transaction is already open on this thread; write transactions cannot be nested: move the inner writes into the outer one"
            )
        }
        writerGate.wait()
        let closed = state.withLock { state -> Bool in
            if state.closed { return true }
            state.writerThread = me
            return false
        }
        if closed {
            writerGate.signal()
            throw closedError()
        }
        do throws(LocalStoreError) {
            try writer.execute("BEGIN IMMEDIATE")
        } catch {
            releaseWriter()
            throw error
        }
    }

    /// Commits and releases the writer; on failure rolls back, releases
    /// and throws.
    func commitWriteTransaction() throws(LocalStoreError) {
        defer { releaseWriter() }
        do throws(LocalStoreError) {
            try writer.execute("COMMIT")
        } catch {
            writer.rollback()
            throw error
        }
    }

    /// Rolls back and releases the writer.
    func rollbackWriteTransaction() {
        writer.rollback()
        releaseWriter()
    }

    private func releaseWriter() {
        state.withLock { $0.writerThread = nil }
        writerGate.signal()
    }

    // MARK: Reading

    /// Runs `body` with a reader on its own connection, in one read
    /// transaction: every read inside sees the same committed snapshot.
    /// Readers never wait for a writer.
    ///
    /// ```swift
    /// let (count, first) = try store.read { reader in
    ///     (try reader.count(LocalQuery("Task")), try reader.objects(LocalQuery("Task").limit(1)).first)
    /// }
    /// ```
    public func read<Result>(_ body: (LocalStoreReader) throws -> Result) throws -> Result {
        let connection = try checkOutReader()
        defer { checkIn(connection) }
        try connection.execute("BEGIN")
        defer { try? connection.execute("COMMIT") }
        return try body(LocalStoreReader(access: LocalStoreAccess(connection: connection, tables: tables, schema: schema)))
    }

    func checkOutReader() throws(LocalStoreError) -> SQLiteConnection {
        let reused: SQLiteConnection?? = state.withLock { state in
            state.closed ? nil : .some(state.idleReaders.popLast())
        }
        guard let reused else { throw closedError() }
        if let reused { return reused }
        let connection = try SQLiteConnection.localRealm(
            at: fileURL, create: false, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds)
        do throws(LocalStoreError) {
            try connection.execute("PRAGMA query_only = 1")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    func checkIn(_ connection: SQLiteConnection) {
        connection.rollback()
        let keep = state.withLock { state -> Bool in
            guard !state.closed, state.idleReaders.count < configuration.maximumIdleReaders else { return false }
            state.idleReaders.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    // MARK: Conveniences (one read each)

    /// The object of `className` whose primary key is `primaryKey`.
    public func object(_ className: String, primaryKey: BSON) throws(LocalStoreError) -> LocalStoreRow? {
        try readTyped { reader throws(LocalStoreError) in try reader.object(className, primaryKey: primaryKey) }
    }

    /// The objects `query` selects.
    public func objects(_ query: LocalQuery) throws(LocalStoreError) -> [LocalStoreRow] {
        try readTyped { reader throws(LocalStoreError) in try reader.objects(query) }
    }

    /// How many objects `query` selects.
    public func count(_ query: LocalQuery) throws(LocalStoreError) -> Int {
        try readTyped { reader throws(LocalStoreError) in try reader.count(query) }
    }

    private func readTyped<Result>(_ body: (LocalStoreReader) throws(LocalStoreError) -> Result) throws(LocalStoreError) -> Result {
        let connection = try checkOutReader()
        defer { checkIn(connection) }
        return try body(LocalStoreReader(access: LocalStoreAccess(connection: connection, tables: tables, schema: schema)))
    }
}
