import Dispatch
import Foundation
import IngestCore
import IngestSupport

/// A sink that writes into ClickHouse through its HTTP interface: one
/// `ReplacingMergeTree` table per collection ordered by `_id` (ObjectIds
/// sort by creation time), uploads batched for a short linger window into
/// one `INSERT … FORMAT TabSeparated` per collection, and receipts kept in a
/// separate transactional receipts store (an ``SQLiteSink`` in the state
/// directory, or a ``PostgresSink`` shared by several ingest servers).
///
/// ```swift
/// let receipts = try SQLiteSink(path: "ingest-data/weather.clickhouse-receipts.sqlite")
/// let sink = try ClickHouseSink(url: "http://127.0.0.1:8123", database: "weather", receipts: receipts)
/// try sink.migrate(to: schema)
/// ```
///
/// What exactly once means here (ClickHouse has no transactions):
/// - an upload is acknowledged only after ClickHouse confirmed the insert of
///   its objects (with a cluster, after every shard has them:
///   `insert_distributed_sync=1`), and then its receipt is stored;
/// - a replayed segment is answered from its receipt without writing;
/// - an object whose `_id` is already visible in the table is reported as a
///   duplicate and not inserted again;
/// - the only window left (a crash after the insert and before the receipt,
///   or two servers inserting the same new `_id` at the same moment) stores a
///   row twice, and `ReplacingMergeTree` collapses rows with equal `_id` when
///   parts merge: `SELECT … FINAL` (or `OPTIMIZE TABLE … FINAL`) always sees
///   each `_id` once.
// @unchecked Sendable: `tables`, `pending` and `flushScheduled` are only
// touched while holding `lock`; flushes run on the serial `flushQueue`.
package final class ClickHouseSink: Sink, @unchecked Sendable {
    /// A `Distributed` table over shards declared in ClickHouse's
    /// `remote_servers` configuration.
    package struct Cluster: Sendable, Hashable {
        /// One shard: the server the sink creates the local tables on, and
        /// the database holding them (the shard's `default_database` in
        /// `remote_servers`).
        package struct Shard: Sendable, Hashable {
            package var url: String
            package var database: String
            /// Creates a shard.
            package init(url: String, database: String) {
                self.url = url
                self.database = database
            }
        }

        /// The cluster's name in `remote_servers`.
        package var name: String
        /// The shards, in the configuration's order.
        package var shards: [Shard]

        /// Creates a cluster description.
        package init(name: String, shards: [Shard]) {
            self.name = name
            self.shards = shards
        }
    }

    /// Settings of the ClickHouse sink, each with a documented default.
    package struct Configuration: Sendable {
        /// How long a batch waits at most for uploads to join it (ClickHouse
        /// prefers few large inserts): for uploads that are still encoding
        /// their rows, and until it holds as many uploads as the batch
        /// before it (clients whose last upload was just answered are
        /// sending their next). Uploads that arrive while a batch is being
        /// inserted form the next one. Default 20 ms.
        package var lingerMilliseconds = 20
        /// A batch is sent at once when it holds this many objects. Default 100 000.
        package var maxBatchObjects = 100_000
        /// Write through a `Distributed` table over these shards. Default nil (one server).
        package var cluster: Cluster? = nil

        /// Creates the default configuration.
        package init() {}
    }

    /// The HTTP client of the server holding the tables the sink writes to.
    package let client: ClickHouseClient
    /// The database of the collection tables (the `Distributed` ones with a cluster).
    package let database: String
    /// Where segment receipts are kept.
    package let receipts: any ReceiptStore
    package let configuration: Configuration
    /// `clickhouse:<url>/<database>`, with the cluster's name and shard count when there is one.
    package var description: String {
        let cluster = configuration.cluster.map { " (cluster \($0.name), \($0.shards.count) shards)" } ?? ""
        return "clickhouse:\(client.displayName)/\(database)\(cluster)"
    }

    struct Column {
        var name: String
        var form: ClickHouseColumnForm
        var json: Bool
    }

    struct Table {
        var name: String
        var columns: [Column]
        /// The column names, matched against BSON keys without Strings.
        var keys: BSONKeyTable

        init(name: String, columns: [Column]) {
            self.name = name
            self.columns = columns
            keys = BSONKeyTable(columns.map(\.name))
        }
    }

    /// One upload's objects of one collection, encoded.
    struct Group {
        var table: Table
        /// The rows in RowBinary, back to back; row `i` ends at `rowEnds[i]`.
        var rows: [UInt8] = []
        var rowEnds: [Int] = []
        /// The upload's index of each row's object.
        var indices: [Int] = []
        /// Each row's duplicate-check key (nil: not checked).
        var keys: [ClickHouseKey?] = []
        /// The keys as TabSeparated lines of the duplicate check's external table.
        var keyRows: [UInt8] = []
    }

    /// One upload waiting in a batch.
    final class Job: @unchecked Sendable {  // results are written before a semaphore is signalled, read after
        let groups: [Group]
        let objectCount: Int
        /// Signalled when the batch's inserts are confirmed (or failed).
        let done = DispatchSemaphore(value: 0)
        var duplicates: [Bool] = []
        var error: ClickHouseError?
        /// The batch's receipts, stored together once every job of it has its response.
        var receipts: ReceiptBatch?
        var receiptSlot: Int?
        init(groups: [Group], objectCount: Int) {
            self.groups = groups
            self.objectCount = objectCount
        }
    }

    /// The receipts of one batch's uploads: each job deposits its receipt;
    /// the last one stores them all in one transaction of the receipts
    /// store (one sync instead of one per upload) and wakes the others.
    final class ReceiptBatch: @unchecked Sendable {  // state only under `lock`; results read after `stored` is signalled
        private let lock = Lock()
        private var entries: [PendingReceipt?]
        private var arrived = 0
        private var results: Result<[SinkWriteResult], SinkError>?
        private let stored = DispatchSemaphore(value: 0)

        init(count: Int) { entries = Array(repeating: nil, count: count) }

        /// Deposits receipt `slot` and returns its outcome once the batch is stored.
        func store(_ receipt: PendingReceipt, slot: Int, in store: any ReceiptStore) throws(SinkError) -> SinkWriteResult {
            let all: [PendingReceipt]? = lock.withLock {
                entries[slot] = receipt
                arrived += 1
                return arrived == entries.count ? entries.map { $0! } : nil
            }
            if let all {
                let outcome = Result { () throws(SinkError) in try store.storeReceipts(all) }
                lock.withLock { results = outcome }
                for _ in 1..<entries.count { stored.signal() }
            } else {
                stored.wait()
            }
            let outcome = lock.withLock { results! }
            return try outcome.get()[slot]
        }
    }

    private let lock = Lock()
    private var tables: [String: Table] = [:]
    private var pending: [Job] = []
    private var pendingObjects = 0
    /// A flush is queued or running: the next batch waits for it.
    private var flushing = false
    /// Uploads encoding their rows: a batch waits for them (up to the linger time) before it is sent.
    private var encoding = 0
    private var lingerTimerArmed = false
    /// Uploads in the last batch sent: the next one waits (up to the linger
    /// time) until it holds as many.
    private var expectedJobs = 1
    /// Batches sent so far: a linger timer armed for an earlier batch does not end a later one's wait.
    private var batchNumber = 0
    private let flushQueue = DispatchQueue(label: "dataingest.clickhouse.flush")
    private let shardClients: [ClickHouseClient]

    /// Connects, creates the database (and the shard databases), so that a
    /// wrong URL fails at start-up.
    ///
    /// - Throws: ``SinkError`` `.open` if ClickHouse cannot be reached or refuses.
    package init(
        url: String, database: String, receipts: any ReceiptStore,
        configuration: Configuration = Configuration()
    ) throws(SinkError) {
        self.database = database
        self.receipts = receipts
        self.configuration = configuration
        do throws(ClickHouseError) {
            client = try ClickHouseClient(url: url)
            shardClients = try (configuration.cluster?.shards ?? []).map { (shard) throws(ClickHouseError) in
                try ClickHouseClient(url: shard.url)
            }
            try Self.tolerating(Self.alreadyExists) { () throws(ClickHouseError) in
                try client.execute("CREATE DATABASE IF NOT EXISTS \(Self.quoted(database))")
            }
            for (index, shard) in (configuration.cluster?.shards ?? []).enumerated() {
                try Self.tolerating(Self.alreadyExists) { () throws(ClickHouseError) in
                    try shardClients[index].execute("CREATE DATABASE IF NOT EXISTS \(Self.quoted(shard.database))")
                }
            }
        } catch {
            throw SinkError(.open, "cannot open the ClickHouse sink: \(error.message)", location: url)
        }
    }

    package func close() {
        client.closeIdle()
        for shard in shardClients { shard.closeIdle() }
        receipts.close()
    }

    // MARK: - Sink

    package func migrate(to schema: Schema) throws(SinkError) {
        do throws(ClickHouseError) {
            for object in schema.objectSchemas where object.kind == .asymmetric {
                try migrate(object)
            }
        } catch {
            throw sinkError(error, .migration)
        }
    }

    package func receipt(for key: SegmentKey) throws(SinkError) -> [UInt8]? {
        try receipts.receipt(for: key)
    }

    package func write(
        _ objects: [SinkObject], receipt key: SegmentKey,
        response: ([Bool]) -> [UInt8]
    ) throws(SinkError) -> SinkWriteResult {
        // A replay is answered from the receipt before anything is sent.
        if let stored = try receipts.receipt(for: key) { return .alreadyReceived(response: stored) }
        guard !objects.isEmpty else {
            return try receipts.storeReceipt(for: key, objectCount: 0, response: response([]))
        }
        lock.withLock { encoding += 1 }
        let job: Job
        do throws(ClickHouseError) {
            job = try makeJob(objects)
        } catch {
            let start = lock.withLock {
                encoding -= 1; return startFlushIfDueLocked()
            }
            if start { flushQueue.async { self.flush() } }
            throw sinkError(error, .statement)
        }
        enqueue(job)
        job.done.wait()
        if let error = job.error { throw sinkError(error, .statement) }
        // ClickHouse has confirmed the objects: now the receipt, with those of
        // the batch's other uploads. If a racing upload of the same segment
        // stored one first, its answer wins (its rows and ours collapse by _id).
        let receipt = PendingReceipt(key: key, objectCount: objects.count, response: response(job.duplicates))
        guard let batch = job.receipts, let slot = job.receiptSlot else {
            return try receipts.storeReceipt(for: key, objectCount: objects.count, response: receipt.response)
        }
        return try batch.store(receipt, slot: slot, in: receipts)
    }

    /// Proven objects' rows are encoded from where the schema check found their fields.
    package var readsFields: Bool { true }

    /// Rows per collection as ClickHouse holds them, whoever inserted them:
    /// the rows of the tables' active parts in `system.parts` (on every shard
    /// of a cluster), which is `count()` without `FINAL` read from metadata,
    /// not from the data. Exact, except that a row stored twice in the
    /// window ``ClickHouseSink`` describes counts twice until its parts merge.
    package func collectionCounts() throws(SinkError) -> [CollectionRowCount] {
        let names = lock.withLock { tables.keys.sorted() }
        guard !names.isEmpty else { return [] }
        let list = names.map(Self.stringLiteral).joined(separator: ", ")
        var counts: [String: Int] = [:]
        do throws(ClickHouseError) {
            let places: [(ClickHouseClient, String)] =
                configuration.cluster.map { cluster in
                    cluster.shards.enumerated().map { (shardClients[$0.offset], $0.element.database) }
                } ?? [(client, database)]
            for (client, database) in places {
                let answer = try client.query(
                    """
                    SELECT table, sum(rows) FROM system.parts
                    WHERE active AND database = \(Self.stringLiteral(database)) AND table IN (\(list)) GROUP BY table
                    """)
                for line in answer.split(separator: "\n") {
                    let fields = line.split(separator: "\t")
                    guard fields.count == 2, let rows = Int(fields[1]) else { continue }
                    counts[String(fields[0]), default: 0] += rows
                }
            }
        } catch {
            throw sinkError(error, .statement)
        }
        return names.map { CollectionRowCount(collection: $0, count: counts[$0] ?? 0) }
    }

    // MARK: - Migration

    private func migrate(_ object: ObjectSchema) throws(ClickHouseError) {
        let name = object.className
        var columns = [Column(name: "_id", form: .forPrimaryKey(object.primaryKeyProperty), json: false)]
        for property in object.properties where property.name != "_id" {
            let form = ClickHouseColumnForm(property)
            let json = property.collection != .single || property.type == .mixed || property.type == .object
            columns.append(Column(name: property.name, form: form, json: json))
        }
        func definition(_ column: Column) -> String {
            column.name == "_id"
                ? "\(Self.quoted("_id")) \(column.form.rawValue)"
                : "\(Self.quoted(column.name)) Nullable(\(column.form.rawValue))"
        }
        let ingestedAt = "\(Self.quoted("_ingested_at")) DateTime DEFAULT now()"
        let body = ([definition(columns[0]), ingestedAt] + columns.dropFirst().map(definition)).joined(separator: ", ")
        let engine = "ENGINE = ReplacingMergeTree ORDER BY \(Self.quoted("_id"))"
        if let cluster = configuration.cluster {
            for (index, shard) in cluster.shards.enumerated() {
                try ensureTable(shardClients[index], shard.database, name, body, engine, columns, definition)
            }
            // '' : each shard's default_database from remote_servers.
            let distributed =
                "ENGINE = Distributed(\(Self.quoted(cluster.name)), '', \(Self.quoted(name)), cityHash64(\(Self.quoted("_id"))))"
            try ensureTable(client, database, name, body, distributed, columns, definition)
        } else {
            try ensureTable(client, database, name, body, engine, columns, definition)
        }
        let table = Table(name: name, columns: columns)
        lock.withLock { tables[name] = table }
    }

    /// Creates `database.name` if missing, then adds the columns it lacks
    /// (additive). Several ingest servers may do this at once: a column
    /// another one added between the check and the `ALTER` counts as added
    /// (18.16 has no `ADD COLUMN IF NOT EXISTS`).
    private func ensureTable(
        _ client: ClickHouseClient, _ database: String, _ name: String, _ body: String, _ engine: String,
        _ columns: [Column], _ definition: (Column) -> String
    ) throws(ClickHouseError) {
        try Self.tolerating(Self.alreadyExists) { () throws(ClickHouseError) in
            try client.execute("CREATE TABLE IF NOT EXISTS \(Self.quoted(database)).\(Self.quoted(name)) (\(body)) \(engine)")
        }
        func existing() throws(ClickHouseError) -> Set<String> {
            Set(
                try client.query(
                    "SELECT name FROM system.columns WHERE database = \(Self.stringLiteral(database)) AND table = \(Self.stringLiteral(name))"
                ).split(separator: "\n").map(String.init))
        }
        let before = try existing()
        for column in columns where !before.contains(column.name) {
            do throws(ClickHouseError) {
                try client.execute("ALTER TABLE \(Self.quoted(database)).\(Self.quoted(name)) ADD COLUMN \(definition(column))")
            } catch  where error.serverCode == Self.illegalColumn {
                // "column with this name already exists" if another server added it meanwhile.
                guard try existing().contains(column.name) else { throw error }
            }
        }
    }

    /// ClickHouse's codes for a table (57) or database (82) that exists already.
    static let alreadyExists: Set<Int> = [57, 82]
    /// ClickHouse's ILLEGAL_COLUMN (44), which `ADD COLUMN` of an existing column raises.
    static let illegalColumn = 44

    /// Runs `statement`; a server exception with one of `codes` counts as success.
    static func tolerating(_ codes: Set<Int>, _ statement: () throws(ClickHouseError) -> Void) throws(ClickHouseError) {
        do {
            try statement()
        } catch  where error.code == .server && error.serverCode.map(codes.contains) == true {
            return
        }
    }

    // MARK: - Batching

    private func makeJob(_ objects: [SinkObject]) throws(ClickHouseError) -> Job {
        let known = lock.withLock { tables }
        var groups: [Group] = []
        var slots: [BSONElement?] = []
        // Consecutive objects mostly share a collection: find its group once per run.
        var current = -1
        // For objects the schema check proved: which property each column is.
        var mapped: (group: Int, properties: [String], propertyOfColumn: [Int])?
        for (index, object) in objects.enumerated() {
            if current < 0 || groups[current].table.name != object.collection {
                if let existing = groups.firstIndex(where: { $0.table.name == object.collection }) {
                    current = existing
                } else {
                    guard let table = known[object.collection] else {
                        throw ClickHouseError(.usage, "no table for collection \(object.collection); the schema was not migrated")
                    }
                    groups.append(Group(table: table))
                    current = groups.count - 1
                }
            }
            if let fields = object.fields, mapped?.group != current || mapped?.properties != fields.properties {
                mapped = (current, fields.properties, fields.propertyIndices(of: groups[current].table.columns.map(\.name)))
            }
            let located = object.fields.map { ($0, propertyOfColumn: mapped!.propertyOfColumn) }
            try object.bson.withUnsafeBytes { raw in
                Result { () throws(ClickHouseError) in
                    try ClickHouseRowBinary.appendRow(raw, to: &groups[current], slots: &slots, object: index, fields: located)
                }
            }.get()
        }
        return Job(groups: groups, objectCount: objects.count)
    }

    private func enqueue(_ job: Job) {
        let start: Bool = lock.withLock {
            encoding -= 1
            pending.append(job)
            pendingObjects += job.objectCount
            return startFlushIfDueLocked()
        }
        if start { flushQueue.async { self.flush() } }
    }

    /// Whether a batch is to be sent now (the caller then queues ``flush()``):
    /// nothing is being inserted, and either no upload is still encoding and
    /// the batch holds as many uploads as the one before it, or the batch
    /// is full, or the linger time has passed. Otherwise a linger timer is
    /// armed that sends whatever is pending when it fires.
    private func startFlushIfDueLocked(lingerOver: Bool = false) -> Bool {
        guard !flushing, !pending.isEmpty else { return false }
        let gathered = encoding == 0 && pending.count >= expectedJobs
        if gathered || lingerOver || pendingObjects >= configuration.maxBatchObjects {
            flushing = true
            return true
        }
        if !lingerTimerArmed {
            lingerTimerArmed = true
            let armedFor = batchNumber
            flushQueue.asyncAfter(deadline: .now() + .milliseconds(configuration.lingerMilliseconds)) {
                let start = self.lock.withLock {
                    self.lingerTimerArmed = false
                    return self.startFlushIfDueLocked(lingerOver: self.batchNumber == armedFor)
                }
                if start { self.flush() }
            }
        }
        return false
    }

    /// Sends every pending job: per collection one duplicate check and one
    /// insert, then wakes the jobs with their duplicate flags or the error,
    /// and sends the next batch if one is due.
    private func flush() {
        let jobs: [Job] = lock.withLock {
            defer { pending.removeAll(); pendingObjects = 0 }
            if !pending.isEmpty {
                expectedJobs = pending.count
                batchNumber += 1
            }
            return pending
        }
        if !jobs.isEmpty { send(jobs) }
        let again = lock.withLock {
            flushing = false
            return startFlushIfDueLocked()
        }
        if again { flush() }
    }

    private func send(_ jobs: [Job]) {
        for job in jobs { job.duplicates = [Bool](repeating: true, count: job.objectCount) }
        do throws(ClickHouseError) {
            var collections: [String] = []
            for job in jobs {
                for group in job.groups where !collections.contains(group.table.name) { collections.append(group.table.name) }
            }
            for collection in collections.sorted() {
                let members = jobs.compactMap { job in job.groups.first { $0.table.name == collection }.map { (job, $0) } }
                let table = lock.withLock { tables[collection] } ?? members[0].1.table
                let keyForm = table.columns[0].form
                let idColumn = Self.quoted("_id")
                // Already stored (visible in any part, merged or not). The batch's
                // ids go as an external table: ClickHouse parses TabSeparated
                // rows far faster than thousands of literals in `IN (…)`.
                var keyRows: [UInt8] = []
                for (_, group) in members { keyRows += group.keyRows }
                var stored = Set<ClickHouseKey>()
                if !keyRows.isEmpty {
                    let ids = ClickHouseClient.ExternalTable(
                        name: "_dataingest_ids",
                        structure: "key \(ClickHouseRowBinary.keyType(keyForm))", rows: keyRows)
                    let answer = try client.execute(
                        """
                        SELECT \(ClickHouseRowBinary.keyOutput(keyForm, column: idColumn)) FROM \(qualified(collection)) \
                        WHERE \(ClickHouseRowBinary.keyExpression(keyForm, column: idColumn)) IN _dataingest_ids
                        """, external: ids)
                    for line in answer.split(separator: 0x0A) {
                        if let key = ClickHouseKey(answer: line, form: keyForm) { stored.insert(key) }
                    }
                }
                // The first of equal new _ids in the batch is inserted, the rest are duplicates.
                var body: [UInt8] = []
                var rows = 0
                for (job, group) in members {
                    // Runs of new rows are copied whole; a duplicate ends a run.
                    var start = 0
                    for (offset, index) in group.indices.enumerated() {
                        if let key = group.keys[offset], !stored.insert(key).inserted {
                            body.append(contentsOf: group.rows[start..<(offset == 0 ? 0 : group.rowEnds[offset - 1])])
                            start = group.rowEnds[offset]
                            continue
                        }
                        job.duplicates[index] = false
                        rows += 1
                    }
                    body.append(contentsOf: group.rows[start...])
                }
                guard rows > 0 else { continue }
                let columns = table.columns.map { Self.quoted($0.name) }.joined(separator: ", ")
                try client.execute(
                    "INSERT INTO \(qualified(collection)) (\(columns)) FORMAT RowBinary", body: body,
                    settings: configuration.cluster == nil ? [] : [("insert_distributed_sync", "1")])
            }
        } catch {
            for job in jobs { job.error = error }
        }
        if jobs.first?.error == nil {
            let batch = ReceiptBatch(count: jobs.count)
            for (slot, job) in jobs.enumerated() {
                job.receipts = batch
                job.receiptSlot = slot
            }
        }
        for job in jobs { job.done.signal() }
    }

    // MARK: - Plumbing

    private func qualified(_ table: String) -> String { "\(Self.quoted(database)).\(Self.quoted(table))" }

    private func sinkError(_ error: ClickHouseError, _ permanent: SinkError.Code) -> SinkError {
        SinkError(
            error.isTransient ? .unavailable : permanent, error.message + (error.isTransient ? "; retry later" : ""),
            databaseCode: error.serverCode.map { Int32(clamping: $0) }, location: description)
    }

    static func quoted(_ identifier: String) -> String {
        "`" + identifier.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "`", with: "\\`") + "`"
    }

    static func stringLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
