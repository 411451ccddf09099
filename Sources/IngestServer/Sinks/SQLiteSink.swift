import Foundation
import IngestCore
import IngestSupport

/// A sink that writes into an embedded SQLite database: one table per
/// collection, typed columns for scalar properties, Extended JSON text for
/// embedded objects, lists, maps and mixed values, `_id` as the primary key,
/// and a receipts table for idempotent uploads. See Docs/Server.md ("SQLite
/// sink") for the column mapping.
///
/// ```swift
/// let sink = try SQLiteSink(path: "ingest-data/weather.sqlite")
/// try sink.migrate(to: schema)
/// let result = try sink.write(objects, receipt: key) { _ in Array(#"{"accepted":2}"#.utf8) }
/// ```
///
/// One connection, owned by a lock: every call is serialized (SQLite allows
/// one writer anyway), so uploads queue here and each segment is one
/// `BEGIN IMMEDIATE … COMMIT`. Tables are `WITHOUT ROWID`, clustered on
/// `_id`; ObjectIds are stored as their 12 bytes, which sort by creation
/// time, so inserts append at the end of the B-tree, up to 100 rows per
/// statement (``MultiRowInsert``).
// @unchecked Sendable: all mutable state (the connection, cached statements,
// table layouts, counts) is only touched while holding `lock`.
package final class SQLiteSink: Sink, ReceiptStore, @unchecked Sendable {
    /// Settings of the SQLite sink, each with a documented default.
    package struct Configuration: Sendable {
        /// `PRAGMA synchronous`: `FULL` (default) makes an acknowledged upload
        /// survive power loss; `NORMAL` survives process crashes only but
        /// syncs less often; `EXTRA` is SQLite's own. With `FULL` SQLite runs
        /// at `NORMAL` and the writers sync the WAL themselves, outside the
        /// sink's lock, before they answer (``SQLiteWALSync``).
        package var synchronous: String = "FULL"
        /// Milliseconds to wait for a lock held by another process before
        /// answering busy (503). Default 5000.
        package var busyTimeoutMilliseconds: Int32 = 5000
        /// `PRAGMA page_size` of a database the sink creates: a power of two
        /// from 512 to 65536. A database that exists already keeps the page
        /// size it was created with. Default 16384: uploads with ObjectId
        /// keys append at the end of each table's B-tree, and larger pages
        /// mean fewer pages, WAL frames and writes per commit. Tables keyed
        /// by random strings or UUIDs insert into the middle of the B-tree,
        /// where every changed page is written whole, and gain little.
        package var pageSize = 16_384

        /// The page sizes SQLite accepts.
        package static func isValidPageSize(_ bytes: Int) -> Bool {
            (512...65_536).contains(bytes) && bytes & (bytes - 1) == 0
        }

        /// Creates the default configuration.
        package init() {}
    }

    /// The database file.
    package let path: String
    package var description: String { "sqlite:\(path)" }

    private let lock = Lock()
    private var db: SQLiteConnection?
    private var tables: [String: Table] = [:]
    /// What preparing a write's parameters needs of each table, readable
    /// without `lock` (which a write holds while it commits).
    private let layouts = LockedBox<[String: Layout]>([:])
    /// Writes waiting for the lock; its holder writes them all (group commit).
    private let queue = LockedBox<[PendingWrite]>([])
    /// A second connection for ``receipt(for:)``, so that an upload's
    /// receipt check does not wait for a write's commit (WAL lets it read
    /// the last committed state meanwhile); opened on first use.
    /// Closed with the sink (under `lock`, then this box's lock: never the other way round).
    private let reader = LockedBox<(connection: SQLiteConnection?, closed: Bool)>((nil, false))
    private let busyTimeoutMilliseconds: Int32
    /// With `synchronous=FULL`: the WAL's fsync, made outside `lock`.
    private let walSync: SQLiteWALSync?
    /// Called with the number of writes each transaction holds, before its
    /// `BEGIN` and with the lock held (a seam for tests: group commit).
    package let onTransaction = LockedBox<(@Sendable (Int) -> Void)?>(nil)

    /// The name of the receipts table (reserved: no collection may use it).
    package static let receiptsTable = "_dataingest_receipts"

    /// A collection table's known columns and its insert statements.
    struct Table {
        var name: String
        /// Column name → storage form, in creation order.
        var columns: [(name: String, form: ColumnForm)]
        var count: Int
        /// One row, `ON CONFLICT("_id") DO NOTHING`.
        var insertSQL: String
        /// ``MultiRowInsert/rows`` rows at once (nil when the table has too
        /// many columns for two rows in one statement).
        var multiRowInsert: MultiRowInsert?
        /// The column names, matched against BSON keys without Strings.
        var keys: BSONKeyTable
        /// `columns[i].form`, without the names.
        var forms: [ColumnForm]

        init(name: String, columns: [(name: String, form: ColumnForm)], count: Int, insertSQL: String, multiRowInsert: MultiRowInsert?) {
            self.name = name
            self.columns = columns
            self.count = count
            self.insertSQL = insertSQL
            self.multiRowInsert = multiRowInsert
            keys = BSONKeyTable(columns.map(\.name))
            forms = columns.map(\.form)
        }
    }

    /// `INSERT OR FAIL … VALUES (…), (…), …`: prepared objects go into the
    /// table this many at a time. One statement keeps its cursor on the
    /// table's last page from one row to the next, where a statement per
    /// row finds each row's place from the root of the B-tree again
    /// (ObjectId keys arrive in increasing order: Benchmarks/README.md,
    /// "Session 13"). A duplicate `_id` stops the statement with the rows
    /// before it inserted (`OR FAIL`); see ``writeLocked(_:db:added:)``.
    struct MultiRowInsert {
        var sql: String
        var rows: Int
        /// Parameters per row: `_id`, `_ingested_at`, then the properties.
        var parametersPerRow: Int32

        /// Rows per statement at most.
        static let maxRows = 100
        /// Parameters per statement at most (a wide table gets fewer rows,
        /// so that its statement stays small to prepare and to keep).
        static let maxParameters = 4096
    }

    /// A table's insert statement and how its columns are bound.
    struct Layout: Sendable {
        /// The column names: `_id`, then the properties (not `_ingested_at`).
        var columnNames: [String]
        var keys: BSONKeyTable
        var forms: [ColumnForm]
        var insertSQL: String
    }

    /// One caller's write, queued until a lock holder writes it.
    // @unchecked Sendable: its fields are set by the caller before it is
    // queued, and by the lock holder while it holds `lock`; the caller reads
    // the result after taking `lock` itself.
    final class PendingWrite: @unchecked Sendable {
        let objects: [SinkObject]
        let rows: SQLitePreparedRows?
        let key: SegmentKey
        let objectCount: Int
        /// The caller's closure, valid while the caller waits; cleared when written.
        var response: (([Bool]) -> [UInt8])?
        var result: Result<SinkWriteResult, SinkError>?
        /// Written in the open transaction (not rolled back to its savepoint).
        var succeeded = false
        /// Rows added per collection, counted once the transaction commits.
        var added: [String: Int] = [:]
        /// The number ``SQLiteWALSync`` gave its transaction's commit.
        var commitSequence: UInt64 = 0

        init(objects: [SinkObject], rows: SQLitePreparedRows?, key: SegmentKey, objectCount: Int, response: @escaping ([Bool]) -> [UInt8]) {
            self.objects = objects
            self.rows = rows
            self.key = key
            self.objectCount = objectCount
            self.response = response
        }
    }

    /// Opens (creating if needed) the database at `path` in WAL mode and
    /// creates the receipts table.
    ///
    /// - Throws: ``SinkError`` `.open` if the file cannot be opened or WAL
    ///   cannot be enabled.
    package init(path: String, configuration: Configuration = Configuration()) throws(SinkError) {
        self.path = path
        // Checked before anything is created: a refused configuration leaves no file behind.
        guard Configuration.isValidPageSize(configuration.pageSize) else {
            throw SinkError(
                .open, "the SQLite sink's page size must be a power of two from 512 to 65536, not \(configuration.pageSize)",
                location: path)
        }
        busyTimeoutMilliseconds = configuration.busyTimeoutMilliseconds
        let synchronous =
            ["OFF", "NORMAL", "FULL", "EXTRA"].contains(configuration.synchronous.uppercased())
            ? configuration.synchronous.uppercased() : "FULL"
        walSync = synchronous == "FULL" ? SQLiteWALSync(databasePath: path) : nil
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? PrivateFiles.makeDirectory(directory)  // 0700, like the state directory
        }
        // Created 0600 before SQLite opens it: SQLite gives -wal and -shm its mode.
        try? PrivateFiles.createFile(path)
        do {
            db = try SQLiteConnection(
                path: path,
                options: .init(
                    access: .readWriteCreate,
                    busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds))
        } catch {
            throw SinkError(error)
        }
        do throws(SinkError) {
            // journal_mode answers with the mode in effect: WAL may be refused.
            let wal: (enabled: Bool, journalMode: String?)
            let db = try handle()
            // Takes effect only while the file is empty, before WAL writes its first page.
            try execute("PRAGMA page_size=\(configuration.pageSize)")
            do { wal = try db.enableWAL() } catch { throw SinkError(error) }
            guard wal.enabled else {
                throw SinkError(
                    .open,
                    "the SQLite sink could not switch to WAL (journal mode is \(wal.journalMode ?? "unknown")); "
                        + "put the database on a local file system", location: path)
            }
            // FULL's fsync is made by the writers, outside the lock (walSync).
            try execute("PRAGMA synchronous=\(walSync == nil ? synchronous : "NORMAL")")
            try execute(
                """
                CREATE TABLE IF NOT EXISTS "\(Self.receiptsTable)" (
                  store_id BLOB NOT NULL, segment_number INTEGER NOT NULL, received_at INTEGER NOT NULL,
                  object_count INTEGER NOT NULL, response TEXT NOT NULL,
                  PRIMARY KEY (store_id, segment_number)) WITHOUT ROWID
                """)
        } catch {
            closeLocked()
            throw error
        }
    }

    deinit { closeLocked() }

    package func close() {
        lock.withLock { closeLocked() }
    }

    private func closeLocked() {
        db?.close()
        db = nil
        reader.withLock { reader in
            reader.connection?.close()
            reader = (nil, true)
        }
    }

    // MARK: - Sink

    package func migrate(to schema: Schema) throws(SinkError) {
        try lock.withLock { () throws(SinkError) in
            for object in schema.objectSchemas where object.kind == .asymmetric {
                try migrateLocked(object)
            }
        }
    }

    /// Read on a connection of its own: a committed receipt is found
    /// without waiting for the write in progress (the write checks again
    /// inside its transaction, so a receipt committed meanwhile still wins).
    package func receipt(for key: SegmentKey) throws(SinkError) -> [UInt8]? {
        let stored = try reader.withLock { (reader) throws(SinkError) -> [UInt8]? in
            guard !reader.closed else { throw SinkError(.closed, "the SQLite sink is closed", location: path) }
            if reader.connection == nil {
                do throws(SQLiteError) {
                    reader.connection = try SQLiteConnection(
                        path: path, options: .init(access: .readWrite, busyTimeoutMilliseconds: busyTimeoutMilliseconds))
                } catch {
                    throw SinkError(error)
                }
            }
            return try Self.receipt(key, on: reader.connection!)
        }
        // The receipt's commit may not be on disk yet: answer only once it is.
        if stored != nil { try walSync?.syncAll() }
        return stored
    }

    package func write(
        _ objects: [SinkObject], receipt key: SegmentKey,
        response: ([Bool]) -> [UInt8]
    ) throws(SinkError) -> SinkWriteResult {
        try write(objects, receipt: key, objectCount: objects.count, response: response)
    }

    /// Stores only a receipt (ClickHouse keeps its receipts here): `objectCount`
    /// objects of the segment went to the other sink.
    package func storeReceipt(for key: SegmentKey, objectCount: Int, response: [UInt8]) throws(SinkError) -> SinkWriteResult {
        try write([], receipt: key, objectCount: objectCount) { _ in response }
    }

    /// Stores the receipts in one `BEGIN IMMEDIATE … COMMIT` (one sync).
    package func storeReceipts(_ receipts: [PendingReceipt]) throws(SinkError) -> [SinkWriteResult] {
        let (results, commit) = try lock.withLock { () throws(SinkError) -> ([SinkWriteResult], UInt64) in
            let db = try handle()
            let results = try db.transaction(.immediate, mapError: { SinkError($0) }) { () throws(SinkError) -> [SinkWriteResult] in
                let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
                var results: [SinkWriteResult] = []
                results.reserveCapacity(receipts.count)
                for receipt in receipts {
                    if let stored = try receiptLocked(receipt.key) {
                        results.append(.alreadyReceived(response: stored))
                    } else {
                        try insertReceiptLocked(receipt.key, objectCount: receipt.objectCount, response: receipt.response, now: now)
                        results.append(.written(duplicates: [], response: receipt.response))
                    }
                }
                return results
            }
            return (results, walSync?.noteCommit() ?? 0)
        }
        try walSync?.sync(through: commit)
        return results
    }

    private func write(
        _ objects: [SinkObject], receipt key: SegmentKey, objectCount: Int,
        response: ([Bool]) -> [UInt8]
    ) throws(SinkError) -> SinkWriteResult {
        // Outside the lock: the parameters of every object, from its bytes.
        let rows = objects.isEmpty ? nil : SQLitePreparedRows(objects, layouts: layouts.withLock { $0 })
        return try withoutActuallyEscaping(response) { (response) throws(SinkError) -> SinkWriteResult in
            let pending = PendingWrite(objects: objects, rows: rows, key: key, objectCount: objectCount, response: response)
            queue.withLock { $0.append(pending) }
            // Whoever holds the lock writes every queued write in its
            // transaction (group commit): when this one gets the lock, its
            // write may be committed already.
            lock.withLock {
                if pending.result == nil { writeQueuedLocked() }
            }
            let result = try pending.result!.get()
            try walSync?.sync(through: pending.commitSequence)
            return result
        }
    }

    /// Writes every queued write in one `BEGIN IMMEDIATE … COMMIT` (one
    /// sync for all of them), each in a savepoint of its own when there are
    /// several, so that one write's failure leaves the others to commit.
    /// Each write's result is set once the transaction has committed (or
    /// failed); the counts follow the commit.
    private func writeQueuedLocked() {
        let batch = queue.withLock { queued -> [PendingWrite] in
            defer { queued.removeAll(keepingCapacity: true) }
            return queued
        }
        guard !batch.isEmpty else { return }
        onTransaction.withLock { $0 }?(batch.count)
        defer { for write in batch { write.response = nil } }  // not kept past the caller's call
        func fail(_ error: SinkError) {
            for write in batch where write.result == nil || write.succeeded { write.result = .failure(error) }
        }
        let db: SQLiteConnection
        do throws(SinkError) { db = try handle() } catch { return fail(error) }
        do throws(SQLiteError) { try db.begin(.immediate) } catch { return fail(SinkError(error)) }
        let savepoints = batch.count > 1
        var added: [String: Int] = [:]
        for write in batch {
            do throws(SinkError) {
                if savepoints { try execute("SAVEPOINT dataingest_write") }
                write.result = .success(try writeLocked(write, db: db, added: &write.added))
                if savepoints { try execute("RELEASE dataingest_write") }
                write.succeeded = true
            } catch {
                write.result = .failure(error)
                write.succeeded = false
                guard savepoints, db.isInTransaction,
                    (try? execute("ROLLBACK TO dataingest_write")) != nil, (try? execute("RELEASE dataingest_write")) != nil
                else {
                    // SQLite ended the transaction itself (or cannot return to the
                    // savepoint): nothing of the batch is committed.
                    db.rollback()
                    return fail(error)
                }
            }
        }
        do throws(SQLiteError) {
            try db.commit()
        } catch {
            db.rollback()
            return fail(SinkError(error))
        }
        if let walSync {
            let sequence = walSync.noteCommit()
            for write in batch { write.commitSequence = sequence }
        }
        for write in batch where write.succeeded {
            for (collection, count) in write.added { added[collection, default: 0] += count }
        }
        // Committed: the counts follow.
        for (collection, count) in added { tables[collection]?.count += count }
    }

    /// One write inside the open transaction: the receipt check, the
    /// objects (prepared ones bound from their parameters), the receipt.
    private func writeLocked(_ write: PendingWrite, db: SQLiteConnection, added: inout [String: Int]) throws(SinkError) -> SinkWriteResult {
        let key = write.key
        // Checked inside the write transaction: of two racing uploads of
        // one segment, the second sees the first one's receipt.
        if let stored = try receiptLocked(key) {
            return .alreadyReceived(response: stored)
        }
        let objects = write.objects
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        var duplicates = [Bool](repeating: false, count: objects.count)
        // Consecutive objects mostly share a collection: look its table up
        // once per run (and keep its parts in locals: no copy of the
        // table per object).
        var current:
            (
                name: String, keys: BSONKeyTable, forms: [ColumnForm], statement: SQLiteStatement, prepared: Bool,
                multiRowInsert: MultiRowInsert?
            )?
        var run = 0  // objects inserted into `current` since it was looked up
        // After a duplicate stopped a multi-row insert, the rest of its rows
        // go one at a time: an upload of duplicates costs at most one
        // stopped statement per `rows` objects.
        var oneAtATimeUntil = 0
        var index = objects.startIndex
        while index < objects.endIndex {
            let collection = objects[index].collection
            if current?.name != collection {
                if let current { added[current.name, default: 0] += run }
                run = 0
                guard let table = tables[collection] else {
                    throw SinkError(
                        .migration, "no table for collection \(collection); the schema was not migrated",
                        location: path)
                }
                // Parameters made for an older layout are not used.
                let usesRows = write.rows?.insertSQL[collection] == table.insertSQL
                current = (collection, table.keys, table.forms, try prepared(table.insertSQL), usesRows, table.multiRowInsert)
            }
            if current!.prepared, let insert = current!.multiRowInsert, index >= oneAtATimeUntil, let rows = write.rows,
                index + insert.rows <= objects.endIndex, rows.arePrepared(index..<(index + insert.rows))
            {
                let chunk = index..<(index + insert.rows)
                let inserted = try insertPreparedLocked(chunk, rows: rows, of: collection, with: insert, now: now)
                run += inserted
                index += inserted
                if inserted < chunk.count {
                    // This object's `_id` is stored already (or repeats an earlier row's).
                    duplicates[index] = true
                    oneAtATimeUntil = chunk.upperBound
                    index += 1
                }
                continue
            }
            let inserted: Bool
            if current!.prepared, let rows = write.rows, rows.isPrepared(index) {
                inserted = try insertPreparedLocked(index, of: objects[index], rows: rows, with: current!.statement, now: now)
            } else {
                inserted = try insertLocked(
                    objects[index], keys: current!.keys, forms: current!.forms,
                    with: current!.statement, now: now)
            }
            duplicates[index] = !inserted
            if inserted { run += 1 }
            index += 1
        }
        if let current { added[current.name, default: 0] += run }
        let body = write.response!(duplicates)
        try insertReceiptLocked(key, objectCount: write.objectCount, response: body, now: now)
        return .written(duplicates: duplicates, response: body)
    }

    /// How many prepared objects of `collection` one insert statement takes
    /// (``MultiRowInsert``; 1: one at a time), nil before the collection's
    /// table is migrated.
    package func rowsPerInsert(into collection: String) -> Int? {
        lock.withLock { tables[collection].map { $0.multiRowInsert?.rows ?? 1 } }
    }

    /// Counted at start-up, then kept up to date by this sink's own writes.
    package var countsAreInMemory: Bool { true }

    /// Proven objects are bound from where the schema check found their
    /// fields, without walking them again (``SQLitePreparedRows``).
    package var readsFields: Bool { true }

    /// Exact: counted at start-up, then kept up to date by this sink's own
    /// writes (one process writes a SQLite sink).
    package func collectionCounts() throws(SinkError) -> [CollectionRowCount] {
        lock.withLock {
            tables.values.map { CollectionRowCount(collection: $0.name, count: $0.count) }.sorted { $0.collection < $1.collection }
        }
    }

    // MARK: - Migration

    private func migrateLocked(_ object: ObjectSchema) throws(SinkError) {
        let name = object.className
        guard name != Self.receiptsTable else {
            throw SinkError(.migration, "the collection name \(name) is reserved by the sink; rename the class", location: path)
        }
        var existing = try columnNames(of: name)
        if existing.isEmpty {
            let keyForm = ColumnForm.forPrimaryKey(object.primaryKeyProperty)
            try execute(
                """
                CREATE TABLE \(quoted(name)) ("_id" \(keyForm.declaredType) NOT NULL PRIMARY KEY,
                  "_ingested_at" INTEGER NOT NULL) WITHOUT ROWID
                """)
            existing = ["_id", "_ingested_at"]
        }
        for property in object.properties where !existing.contains(property.name) {
            // Additive: new columns are nullable, so existing rows stay valid.
            try execute("ALTER TABLE \(quoted(name)) ADD COLUMN \(quoted(property.name)) \(ColumnForm(property).declaredType)")
            existing.append(property.name)
        }
        // The insert covers the schema's properties; columns of properties a
        // later schema no longer lists stay NULL.
        var columns: [(name: String, form: ColumnForm)] = [("_id", .forPrimaryKey(object.primaryKeyProperty))]
        for property in object.properties where property.name != "_id" {
            columns.append((property.name, ColumnForm(property)))
        }
        let names = (["_id", "_ingested_at"] + columns.dropFirst().map(\.name)).map(quoted).joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")
        let insertSQL = "INSERT INTO \(quoted(name)) (\(names)) VALUES (\(placeholders)) ON CONFLICT(\"_id\") DO NOTHING"
        let parametersPerRow = columns.count + 1
        let rows = min(MultiRowInsert.maxRows, min(MultiRowInsert.maxParameters, try handle().parameterLimit) / parametersPerRow)
        let multiRowInsert =
            rows < 2
            ? nil
            : MultiRowInsert(
                sql: "INSERT OR FAIL INTO \(quoted(name)) (\(names)) VALUES "
                    + Array(repeating: "(\(placeholders))", count: rows).joined(separator: ", "),
                rows: rows, parametersPerRow: Int32(parametersPerRow))
        let count: Int
        if let known = tables[name]?.count { count = known } else { count = try countRows(name) }
        if let old = tables[name]?.insertSQL, old != insertSQL { try handle().forgetStatement(sql: old) }
        if let old = tables[name]?.multiRowInsert?.sql, old != multiRowInsert?.sql { try handle().forgetStatement(sql: old) }
        let table = Table(name: name, columns: columns, count: count, insertSQL: insertSQL, multiRowInsert: multiRowInsert)
        tables[name] = table
        layouts.withLock { $0[name] = Layout(columnNames: columns.map(\.name), keys: table.keys, forms: table.forms, insertSQL: insertSQL) }
    }

    private func columnNames(of table: String) throws(SinkError) -> [String] {
        var names: [String] = []
        try query("PRAGMA table_info(\(quoted(table)))") { statement in names.append(statement.text(at: 1)) }
        return names
    }

    private func countRows(_ table: String) throws(SinkError) -> Int {
        var count = 0
        try query("SELECT count(*) FROM \(quoted(table))") { count = Int($0.int64(at: 0)) }
        return count
    }

    // MARK: - Writing

    /// Inserts one object, bound straight from its BSON bytes; returns false
    /// if its `_id` was already stored.
    private func insertLocked(
        _ object: SinkObject, keys: BSONKeyTable, forms: [ColumnForm], with statement: SQLiteStatement,
        now: Int64
    ) throws(SinkError) -> Bool {
        defer { statement.reset() }
        // Texts and blobs are bound SQLITE_STATIC from the object's bytes: the
        // statement is stepped inside this closure, and reset (unbound) after it.
        let outcome = object.bson.withUnsafeBytes { raw -> Result<Void, SinkError> in
            do {
                try keys.forEachColumn(in: raw) { element, column in
                    // Parameter 1 is _id, 2 is _ingested_at, then the properties.
                    try bind(element, form: forms[column], to: statement, at: Int32(column == 0 ? 1 : column + 2))
                }
            } catch let error as BSONError {
                return .failure(
                    SinkError(
                        .statement, "an object of \(object.collection) is not a valid BSON document: \(error.message)",
                        location: path))
            } catch let error as SQLiteError {
                return .failure(SinkError(error, in: "INSERT INTO \(object.collection)"))
            } catch {
                return .failure(SinkError(.statement, "an object of \(object.collection) cannot be bound: \(error)", location: path))
            }
            do throws(SQLiteError) {
                try statement.bind(now, at: 2)
                _ = try statement.step()
            } catch {
                return .failure(SinkError(error, in: "INSERT INTO \(object.collection)"))
            }
            return .success(())
        }
        try outcome.get()
        return statement.changes > 0
    }

    /// Inserts one prepared object (``SQLitePreparedRows``); returns false
    /// if its `_id` was already stored.
    @inline(__always)
    private func insertPreparedLocked(
        _ index: Int, of object: SinkObject, rows: SQLitePreparedRows, with statement: SQLiteStatement, now: Int64
    ) throws(SinkError) -> Bool {
        defer { statement.reset() }
        // Texts and blobs are bound SQLITE_STATIC from the rows' bytes: the
        // statement is stepped inside this closure, and reset (unbound) after it.
        do throws(SQLiteError) {
            try rows.withBytes { (bytes) throws(SQLiteError) in
                try rows.bind(index, from: bytes, to: statement)
                try statement.bind(now, at: 2)
                _ = try statement.step()
            }
        } catch {
            throw SinkError(error, in: "INSERT INTO \(object.collection)")
        }
        return statement.changes > 0
    }

    /// Inserts prepared objects `range`, all of `collection`, with one
    /// multi-row statement; returns how many were inserted: all of them, or
    /// those before the first whose `_id` is stored already (or repeats an
    /// earlier row's), which stopped the statement.
    private func insertPreparedLocked(
        _ range: Range<Int>, rows: SQLitePreparedRows, of collection: String, with insert: MultiRowInsert, now: Int64
    ) throws(SinkError) -> Int {
        let statement = try prepared(insert.sql)
        defer { statement.reset() }
        do throws(SQLiteError) {
            try rows.withBytes { (bytes) throws(SQLiteError) in
                for (row, index) in range.enumerated() {
                    try rows.bind(index, from: bytes, to: statement, row: Int32(row), parametersPerRow: insert.parametersPerRow)
                    try statement.bind(now, at: Int32(row) * insert.parametersPerRow + 2)
                }
                _ = try statement.step()
            }
            return range.count
        } catch  where error.isPrimaryKeyViolation && statement.changes < range.count {
            return statement.changes
        } catch {
            throw SinkError(error, in: "INSERT INTO \(collection)")
        }
    }

    /// Binds one element (absent columns stay NULL). Strings, ObjectIds and
    /// binaries are bound from the object's bytes (borrowed until the reset).
    private func bind(_ element: BSONElement, form: ColumnForm, to statement: SQLiteStatement, at index: Int32) throws {
        switch element.type {
        case .null, .undefined: try statement.bindNull(at: index)
        case _ where form == .json: try statement.bind(try element.value().extendedJSON(.relaxed), at: index)
        case .bool: try statement.bind(Int64(element.bool == true ? 1 : 0), at: index)
        case .int32, .int64: try statement.bind(element.integer ?? 0, at: index)
        case .double: try statement.bind(element.double ?? 0, at: index)
        case .datetime: try statement.bind(element.datetime ?? 0, at: index)
        case .string: if let bytes = element.stringBytes { try statement.bind(borrowedText: bytes, at: index) }
        case .objectId: if let bytes = element.objectIdBytes { try statement.bind(borrowedBlob: bytes, at: index) }
        case .binary: if let bytes = element.binaryPayload { try statement.bind(borrowedBlob: bytes, at: index) }
        case .decimal128: try statement.bind(element.decimal128?.description ?? "", at: index)
        default: try statement.bind(try element.value().extendedJSON(.relaxed), at: index)
        }
    }

    /// Inserts a receipt (inside the caller's transaction).
    private func insertReceiptLocked(_ key: SegmentKey, objectCount: Int, response body: [UInt8], now: Int64) throws(SinkError) {
        let statement = try prepared(
            """
            INSERT INTO "\(Self.receiptsTable)" (store_id, segment_number, received_at, object_count, response)
            VALUES (?, ?, ?, ?, ?)
            """)
        defer { statement.reset() }
        let stored = body.withUnsafeBytes { raw in
            Result { () throws(SQLiteError) in
                try statement.bind(blob: key.storeId.bytes, at: 1)
                try statement.bind(Int64(bitPattern: key.segmentNumber), at: 2)
                try statement.bind(now, at: 3)
                try statement.bind(Int64(objectCount), at: 4)
                // The response's bytes, borrowed: stepped inside this closure.
                try statement.bind(borrowedText: raw, at: 5)
                _ = try statement.step()
            }
        }
        do throws(SQLiteError) { try stored.get() } catch { throw SinkError(error, in: "INSERT INTO receipts") }
    }

    private func receiptLocked(_ key: SegmentKey) throws(SinkError) -> [UInt8]? {
        try Self.receipt(key, on: try handle())
    }

    private static func receipt(_ key: SegmentKey, on db: SQLiteConnection) throws(SinkError) -> [UInt8]? {
        let statement: SQLiteStatement
        do {
            statement = try db.cachedStatement(
                sql: "SELECT response FROM \"\(Self.receiptsTable)\" WHERE store_id = ? AND segment_number = ?")
        } catch {
            throw SinkError(error)
        }
        defer { statement.reset() }
        do throws(SQLiteError) {
            try statement.bind(blob: key.storeId.bytes, at: 1)
            try statement.bind(Int64(bitPattern: key.segmentNumber), at: 2)
            guard try statement.step() else { return nil }
            return statement.withUnsafeBytes(at: 0, asText: true) { Array($0) }
        } catch {
            throw SinkError(error, in: "SELECT receipt")
        }
    }

    // MARK: - SQLite plumbing

    private func handle() throws(SinkError) -> SQLiteConnection {
        guard let db else { throw SinkError(.closed, "the SQLite sink is closed", location: path) }
        return db
    }

    private func execute(_ sql: String) throws(SinkError) {
        let db = try handle()
        do { try db.execute(sql: sql) } catch { throw SinkError(error) }
    }

    /// Runs an uncached statement and calls `row` for each result row.
    private func query(_ sql: String, row: (SQLiteStatement) -> Void) throws(SinkError) {
        let db = try handle()
        do throws(SQLiteError) {
            let statement = try db.makeStatement(sql: sql)
            while try statement.step() { row(statement) }
        } catch {
            throw SinkError(error)
        }
    }

    private func prepared(_ sql: String) throws(SinkError) -> SQLiteStatement {
        let db = try handle()
        do { return try db.cachedStatement(sql: sql) } catch { throw SinkError(error) }
    }

    private func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

extension SinkError {
    /// The SQLite sink's error for a failure of its connection: busy or
    /// locked is `.busy` and full is `.full` (both answered 503), anything
    /// else `.statement`; `what` names the statement (its SQL by default).
    init(_ error: SQLiteError, in what: String? = nil) {
        switch error.operation {
        case .open:
            self.init(
                .open, "cannot open the SQLite sink: \(error.message); check the directory exists and is writable",
                databaseCode: error.extendedResultCode, location: error.path)
        case .closed:
            self.init(.closed, "the SQLite sink is closed", location: error.path)
        case .prepare, .bind, .step, .execute:
            let code: Code = error.isBusy ? .busy : error.isFull ? .full : .statement
            self.init(
                code, "\(error.message) (in: \(what ?? String(error.sql?.prefix(60) ?? "")))",
                databaseCode: error.extendedResultCode, location: error.path)
        }
    }
}

/// How one property is stored in an SQLite column.
enum ColumnForm: Equatable {
    /// bool (0/1), int, date (ms since 1970).
    case integer
    /// float, double.
    case real
    /// string, decimal128 (its decimal text).
    case text
    /// data, objectId (12 bytes), uuid (16 bytes).
    case blob
    /// Embedded objects, lists, maps and mixed values: relaxed Extended JSON text.
    case json

    init(_ property: Property) {
        guard property.collection == .single else {
            self = .json
            return
        }
        switch property.type {
        case .bool, .int, .date: self = .integer
        case .float, .double: self = .real
        case .string, .decimal128: self = .text
        case .data, .objectId, .uuid: self = .blob
        case .mixed, .object: self = .json
        }
    }

    /// `_id`: its own type's column form (objectId by default).
    static func forPrimaryKey(_ property: Property?) -> ColumnForm {
        property.map(ColumnForm.init) ?? .blob
    }

    /// The declared column type.
    var declaredType: String {
        switch self {
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text, .json: "TEXT"
        case .blob: "BLOB"
        }
    }
}

extension BSONKeyTable {
    /// Walks the document `raw` and calls `body` with each top-level element
    /// named by one of the keys, and that key's index (the column). Fields
    /// of other names are ignored; of several fields of one name the first
    /// wins, as `document[name]` finds it. Throws the walk's `BSONError`
    /// (invalid bytes) or what `body` throws.
    @inline(__always)
    func forEachColumn(in raw: UnsafeRawBufferPointer, _ body: (BSONElement, Int) throws -> Void) throws {
        var bound = BoundColumns()
        var position = 0
        try BSONDocument.forEachElement(in: raw) { element in
            defer { position += 1 }
            // Clients write fields in schema order: the same position is tried first.
            guard let column = index(of: element, hint: position), bound.insert(column) else { return }
            try body(element, column)
        }
    }
}

/// Which columns of one insert are bound already: a bit set, without
/// allocating for tables of up to 128 columns.
private struct BoundColumns {
    private var low: UInt64 = 0
    private var high: UInt64 = 0
    private var rest: Set<Int> = []

    /// Marks `column`; false if it was marked before.
    mutating func insert(_ column: Int) -> Bool {
        switch column {
        case 0..<64:
            let bit: UInt64 = 1 << UInt64(column)
            defer { low |= bit }
            return low & bit == 0
        case 64..<128:
            let bit: UInt64 = 1 << UInt64(column - 64)
            defer { high |= bit }
            return high & bit == 0
        default:
            return rest.insert(column).inserted
        }
    }
}
