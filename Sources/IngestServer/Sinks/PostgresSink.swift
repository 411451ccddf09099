import Foundation
import IngestCore
import IngestSupport

/// A sink that writes into PostgreSQL through libpq: one table per
/// collection with typed columns, `jsonb` for embedded objects, lists, maps
/// and mixed values, `_id` as the primary key, and a receipts table for
/// idempotent uploads. See Docs/Deployment.md ("PostgreSQL") for the column
/// mapping.
///
/// ```swift
/// let sink = try PostgresSink(connection: "postgresql://ingest@127.0.0.1/weather")
/// try sink.migrate(to: schema)
/// let result = try sink.write(objects, receipt: key) { _ in Array(#"{"accepted":2}"#.utf8) }
/// ```
///
/// Each upload is one transaction on a pooled connection:
///
/// 1. `INSERT` the receipt `ON CONFLICT DO NOTHING`: if it already exists
///    (committed by a concurrent or earlier upload of the same segment,
///    possibly on another ingest server) the stored response is returned;
///    a concurrent upload of the same segment waits on the row lock;
/// 2. per collection, `COPY` the objects (text format) into a session
///    temporary staging table, then `INSERT … SELECT … ON CONFLICT ("_id")
///    DO NOTHING RETURNING "_id"`: the ids not returned are duplicates;
/// 3. `UPDATE` the receipt with the response, `COMMIT`.
///
/// Uploads run in parallel on up to ``Configuration/maxConnections``
/// connections. A lost connection (the database restarted) is retried once
/// on a new connection (safe: the receipt makes the write idempotent); if
/// the database is still unreachable the error is transient (503).
// @unchecked Sendable: `tables` and `nextStage` are only touched while
// holding `lock`; connections belong to the pool, one caller at a time.
package final class PostgresSink: Sink, ReceiptStore, @unchecked Sendable {
    /// Settings of the PostgreSQL sink, each with a documented default.
    package struct Configuration: Sendable {
        /// Connections open at once (uploads beyond this wait). Default 8.
        package var maxConnections = 8
        /// Seconds an upload waits for a free connection before 503. Default 30.
        package var acquireTimeout: Double = 30
        /// ``collectionCounts()`` counts a table exactly (`count(*)`) while
        /// PostgreSQL's statistics put it below this many rows, and reports
        /// the statistics' estimate above. Default 100 000.
        package var exactCountLimit = 100_000

        /// Creates the default configuration.
        package init() {}
    }

    /// The connections.
    package let pool: PostgresPool
    package var description: String { "postgres:\(pool.displayName)" }

    /// The name of the receipts table (reserved: no collection may use it).
    package static let receiptsTable = "_dataingest_receipts"

    /// A collection table's known columns and its staging table.
    struct Table {
        var name: String
        /// Column name → storage form; `_id` first.
        var columns: [(name: String, form: PostgresColumnForm)]
        /// The session temporary table uploads COPY into.
        var stageName: String
        /// Identifies the column list: a staging table made for another list is recreated.
        var signature: String
        /// The column names, matched against BSON keys without Strings.
        var keys: BSONKeyTable
        /// Rows go in COPY's binary format (no `numeric` or `real` column), else in text.
        var binary: Bool
        /// ` WITH (FORMAT binary)` for binary tables, else empty.
        var copyOptions: String { binary ? " WITH (FORMAT binary)" : "" }
    }

    private let lock = Lock()
    private var tables: [String: Table] = [:]
    private var nextStage = 0
    private let exactCountLimit: Int

    /// The advisory lock that serializes table creation and migration
    /// across every ingest server sharing the database: `CREATE TABLE IF
    /// NOT EXISTS` alone races (two creators both pass the check, the second
    /// fails on `pg_type`'s unique index).
    static let migrationLock = 7460211

    /// Connects once and creates the receipts table, so that a wrong
    /// connection string fails at start-up.
    ///
    /// - Parameter purpose: what the sink is for, in error messages (the
    ///   ClickHouse sink keeps its receipts in one of these in the shared state).
    /// - Throws: ``SinkError`` `.open` if PostgreSQL cannot be reached or
    ///   refuses the table.
    package init(
        connection: String, configuration: Configuration = Configuration(),
        purpose: String = "the PostgreSQL sink"
    ) throws(SinkError) {
        pool = PostgresPool(
            connection: connection, maxConnections: configuration.maxConnections,
            acquireTimeout: configuration.acquireTimeout)
        exactCountLimit = configuration.exactCountLimit
        do throws(PostgresError) {
            try pool.withConnection { (db: PostgresConnection) throws(PostgresError) -> Void in
                _ = try db.execute(
                    """
                    BEGIN;
                    SELECT pg_advisory_xact_lock(\(Self.migrationLock));
                    CREATE TABLE IF NOT EXISTS "\(Self.receiptsTable)" (
                      store_id bytea NOT NULL, segment_number bigint NOT NULL,
                      received_at timestamptz NOT NULL DEFAULT now(), object_count integer NOT NULL,
                      response text NOT NULL, PRIMARY KEY (store_id, segment_number));
                    COMMIT
                    """)
            }
        } catch {
            throw SinkError(
                .open, "cannot open \(purpose): \(error.message)",
                location: PostgresConnection.redacted(connection))
        }
    }

    package func close() { pool.close() }

    // MARK: - Sink

    package func migrate(to schema: Schema) throws(SinkError) {
        let objects = schema.objectSchemas.filter { $0.kind == .asymmetric }
        for object in objects where object.className == Self.receiptsTable || object.className.utf8.count > 63 {
            throw SinkError(
                .migration,
                "the collection name \(object.className) is reserved by the sink or longer than "
                    + "PostgreSQL's 63-byte identifiers; rename the class", location: pool.displayName)
        }
        do throws(PostgresError) {
            try pool.withConnection { (db: PostgresConnection) throws(PostgresError) -> Void in
                // One migration at a time across all ingest servers sharing the database.
                try db.execute("BEGIN")
                try db.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
                for object in objects {
                    let name = quoted(object.className)
                    let keyForm = PostgresColumnForm.forPrimaryKey(object.primaryKeyProperty)
                    try db.execute(
                        """
                        CREATE TABLE IF NOT EXISTS \(name) ("_id" \(keyForm.sqlType) NOT NULL PRIMARY KEY,
                          "_ingested_at" timestamptz NOT NULL DEFAULT now())
                        """)
                    for property in object.properties where property.name != "_id" {
                        // Additive: new columns are nullable, existing rows stay valid.
                        try db.execute(
                            "ALTER TABLE \(name) ADD COLUMN IF NOT EXISTS \(quoted(property.name)) "
                                + PostgresColumnForm(property).sqlType)
                    }
                    try checkColumnTypes(of: object, on: db)
                }
                try db.execute("COMMIT")
            }
        } catch {
            throw sinkError(error, .migration)
        }
        lock.withLock {
            for object in objects {
                var columns: [(name: String, form: PostgresColumnForm)] = [
                    ("_id", .forPrimaryKey(object.primaryKeyProperty))
                ]
                for property in object.properties where property.name != "_id" {
                    columns.append((property.name, PostgresColumnForm(property)))
                }
                let signature = columns.map { "\($0.name):\($0.form.rawValue)" }.joined(separator: ",")
                let keys = BSONKeyTable(columns.map(\.name))
                let binary = PostgresCopyBinary.canEncode(columns)
                if var table = tables[object.className] {
                    table.columns = columns
                    table.signature = signature
                    table.keys = keys
                    table.binary = binary
                    tables[object.className] = table
                } else {
                    nextStage += 1
                    tables[object.className] = Table(
                        name: object.className, columns: columns,
                        stageName: "_dataingest_stage_\(nextStage)", signature: signature, keys: keys, binary: binary)
                }
            }
        }
    }

    package func receipt(for key: SegmentKey) throws(SinkError) -> [UInt8]? {
        do throws(PostgresError) {
            return try withRetry { (db: PostgresConnection) throws(PostgresError) -> [UInt8]? in
                let rows = try db.query(
                    "SELECT response FROM \"\(Self.receiptsTable)\" WHERE store_id = $1 AND segment_number = $2",
                    Self.keyParameters(key))
                return rows.first.map { $0.first.flatMap { $0 } ?? [] }
            }
        } catch {
            throw sinkError(error, .statement)
        }
    }

    package func write(
        _ objects: [SinkObject], receipt key: SegmentKey,
        response: ([Bool]) -> [UInt8]
    ) throws(SinkError) -> SinkWriteResult {
        try write(objects, receipt: key, objectCount: objects.count, response: response)
    }

    /// ``write(_:receipt:response:)`` with the receipt's `object_count` given
    /// (the objects of a ClickHouse segment are stored elsewhere).
    private func write(
        _ objects: [SinkObject], receipt key: SegmentKey, objectCount: Int,
        response: ([Bool]) -> [UInt8]
    ) throws(SinkError) -> SinkWriteResult {
        // Group by collection (in order of appearance) and encode the COPY
        // data before touching the database.
        var groups: [(table: Table, indices: [Int], data: [UInt8])] = []
        do throws(PostgresError) {
            let known = lock.withLock { tables }
            var groupOf: [String: Int] = [:]
            var slots: [BSONElement?] = []
            // Consecutive objects mostly share a collection: find its group
            // once per run, and encode the run into a local buffer.
            var index = 0
            while index < objects.count {
                let collection = objects[index].collection
                let group: Int
                if let existing = groupOf[collection] {
                    group = existing
                } else {
                    guard let table = known[collection] else {
                        throw PostgresError(.usage, "no table for collection \(collection); the schema was not migrated")
                    }
                    group = groups.count
                    groupOf[collection] = group
                    groups.append((table, [], table.binary ? PostgresCopyBinary.header : []))
                }
                let table = groups[group].table
                // For objects the schema check proved: which property each column is.
                var mapped: (properties: [String], propertyOfColumn: [Int])?
                var data: [UInt8] = []
                swap(&data, &groups[group].data)
                defer { swap(&data, &groups[group].data) }
                while index < objects.count && objects[index].collection == collection {
                    groups[group].indices.append(index)
                    let fields = objects[index].fields
                    if let fields, mapped?.properties != fields.properties {
                        mapped = (fields.properties, fields.propertyIndices(of: table.columns.map(\.name)))
                    }
                    let located = fields.map { ($0, propertyOfColumn: mapped!.propertyOfColumn) }
                    // Encoded straight from the bytes: no document is built.
                    try objects[index].bson.withUnsafeBytes { raw in
                        Result { () throws(PostgresError) in
                            if table.binary {
                                try PostgresCopyBinary.appendRow(
                                    raw, columns: table.columns, keys: table.keys, slots: &slots,
                                    to: &data, object: index, collection: collection, fields: located)
                            } else {
                                try PostgresCopyText.appendRow(
                                    raw, columns: table.columns, keys: table.keys, slots: &slots,
                                    to: &data, object: index, collection: collection, fields: located)
                            }
                        }
                    }.get()
                    index += 1
                }
            }
            for group in groups.indices where groups[group].table.binary {
                groups[group].data += PostgresCopyBinary.trailer
            }
        } catch {
            throw sinkError(error, .statement)
        }

        do throws(PostgresError) {
            return try withRetry { (db: PostgresConnection) throws(PostgresError) -> SinkWriteResult in
                for group in groups { try ensureStage(group.table, on: db) }
                // One round trip: open the transaction, claim the receipt, set a
                // savepoint before the objects (literals: hex bytes and integers only).
                let keyCondition =
                    "store_id = \(Self.byteaLiteral(key.storeId.bytes)) AND segment_number = \(Int64(bitPattern: key.segmentNumber))"
                let claim = try db.executeEach(
                    """
                    BEGIN;
                    INSERT INTO "\(Self.receiptsTable)" (store_id, segment_number, object_count, response)
                    VALUES (\(Self.byteaLiteral(key.storeId.bytes)), \(Int64(bitPattern: key.segmentNumber)), \(objectCount), '')
                    ON CONFLICT DO NOTHING;
                    SAVEPOINT dataingest_direct
                    """)
                if claim.count == 3 && claim[1] == 0 {
                    // Another upload of this segment committed first (it held the row until then).
                    let rows = try db.query("SELECT response FROM \"\(Self.receiptsTable)\" WHERE \(keyCondition)")
                    try db.execute("COMMIT")
                    return .alreadyReceived(response: rows.first?.first.flatMap { $0 } ?? [])
                }
                var duplicates = [Bool](repeating: false, count: objects.count)
                // The usual case, no object stored before: COPY straight into
                // the tables. A duplicate _id fails the COPY (unique violation,
                // 23505): back to the savepoint and through the staging tables.
                var direct = true
                do throws(PostgresError) {
                    for group in groups {
                        let columns = group.table.columns.map { quoted($0.name) }.joined(separator: ", ")
                        try db.copyIn(
                            "COPY \(quoted(group.table.name)) (\(columns)) FROM STDIN\(group.table.copyOptions)", data: group.data)
                    }
                } catch  where error.sqlState == "23505" {
                    direct = false
                    try db.execute("ROLLBACK TO SAVEPOINT dataingest_direct")
                }
                if !direct {
                    duplicates = [Bool](repeating: true, count: objects.count)
                    for group in groups {
                        let columns = group.table.columns.map { quoted($0.name) }.joined(separator: ", ")
                        try db.copyIn(
                            "COPY pg_temp.\(quoted(group.table.stageName)) (\(columns)) FROM STDIN\(group.table.copyOptions)",
                            data: group.data)
                        let inserted = try db.queryText(
                            """
                            INSERT INTO \(quoted(group.table.name)) (\(columns))
                            SELECT \(columns) FROM pg_temp.\(quoted(group.table.stageName))
                            ON CONFLICT ("_id") DO NOTHING RETURNING "_id"::text
                            """)
                        let keyForm = group.table.columns[0].form
                        if inserted.count == group.indices.count {
                            for index in group.indices { duplicates[index] = false }
                        } else {
                            // The first object with each returned _id was inserted; the rest are duplicates.
                            var fresh: [String: Int] = [:]
                            for row in inserted { if let text = row.first ?? nil { fresh[text, default: 0] += 1 } }
                            for index in group.indices {
                                guard let text = PostgresCopyText.keyText((try? objects[index].document)?["_id"], form: keyForm),
                                    let left = fresh[text], left > 0
                                else { continue }
                                fresh[text] = left - 1
                                duplicates[index] = false
                            }
                        }
                    }
                }
                let body = response(duplicates)
                // One round trip: the response into the receipt, and COMMIT.
                if let literal = Self.textLiteral(body) {
                    try db.executeEach("UPDATE \"\(Self.receiptsTable)\" SET response = \(literal) WHERE \(keyCondition); COMMIT")
                } else {
                    try db.execute(
                        "UPDATE \"\(Self.receiptsTable)\" SET response = $3 WHERE store_id = $1 AND segment_number = $2",
                        Self.keyParameters(key) + [.text(String(decoding: body, as: UTF8.self))])
                    try db.execute("COMMIT")
                }
                return .written(duplicates: duplicates, response: body)
            }
        } catch {
            throw sinkError(error, .statement)
        }
    }

    /// Rows per collection as the database holds them, whoever wrote them:
    /// `count(*)` for tables PostgreSQL's statistics put below
    /// ``Configuration/exactCountLimit`` rows, the statistics' estimate
    /// above (`isEstimate`): `n_live_tup` of `pg_stat_user_tables` (kept up
    /// to date by every backend, a few seconds behind), or `reltuples` scaled
    /// to the table's current size. Two round trips at most, whatever the
    /// table sizes.
    /// Proven objects' rows are encoded from where the schema check found their fields.
    package var readsFields: Bool { true }

    package func collectionCounts() throws(SinkError) -> [CollectionRowCount] {
        let names = lock.withLock { tables.keys.sorted() }
        guard !names.isEmpty else { return [] }
        let limit = exactCountLimit
        do throws(PostgresError) {
            return try withRetry { (db: PostgresConnection) throws(PostgresError) -> [CollectionRowCount] in
                let regclasses = names.compactMap { Self.textLiteral(Array(quoted($0).utf8)) }
                    .map { "to_regclass(\($0))" }.joined(separator: ", ")
                let statistics = try db.queryText(
                    """
                    SELECT c.relname, s.n_live_tup, c.reltuples::bigint, c.relpages,
                           pg_relation_size(c.oid) / current_setting('block_size')::bigint
                    FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
                    WHERE c.oid IN (\(regclasses))
                    """)
                var estimates: [String: Int] = [:]
                for row in statistics {
                    guard row.count == 5, let name = row[0] else { continue }
                    let number = { (index: Int) -> Double in row[index].flatMap { Double($0) } ?? 0 }
                    if number(1) > 0 {
                        estimates[name] = Int(number(1))
                    } else if number(2) > 0 && number(3) > 0 {
                        estimates[name] = Int((number(2) / number(3) * number(4)).rounded())
                    }
                }
                let exact = names.filter { (estimates[$0] ?? 0) < limit }
                var counts: [String: Int] = [:]
                if !exact.isEmpty {
                    let row =
                        try db.queryText(
                            "SELECT "
                                + exact.map { "(SELECT count(*) FROM \(quoted($0)))" }
                                .joined(separator: ", ")
                        ).first ?? []
                    for (index, name) in exact.enumerated() where index < row.count {
                        counts[name] = row[index].flatMap { Int($0) } ?? 0
                    }
                }
                return names.map { name in
                    if let count = counts[name] { return CollectionRowCount(collection: name, count: count, isEstimate: false) }
                    return CollectionRowCount(collection: name, count: estimates[name] ?? 0, isEstimate: true)
                }
            }
        } catch {
            throw sinkError(error, .statement)
        }
    }

    // MARK: - Receipts of another sink

    package func storeReceipt(for key: SegmentKey, objectCount: Int, response: [UInt8]) throws(SinkError) -> SinkWriteResult {
        try write([], receipt: key, objectCount: objectCount) { _ in response }
    }

    /// Fails when a column of `object`'s table already exists with another
    /// type than the schema's (`ADD COLUMN IF NOT EXISTS` keeps the old one):
    /// writes would fail on every row, so the schema change is refused instead.
    private func checkColumnTypes(of object: ObjectSchema, on db: PostgresConnection) throws(PostgresError) {
        guard let table = Self.textLiteral(Array(quoted(object.className).utf8)) else { return }
        let rows = try db.queryText(
            """
            SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = to_regclass(\(table)) AND attnum > 0 AND NOT attisdropped
            """)
        var existing: [String: String] = [:]
        for row in rows where row.count == 2 { if let name = row[0], let type = row[1] { existing[name] = type } }
        for property in object.properties {
            let form = property.name == "_id" ? PostgresColumnForm.forPrimaryKey(property) : PostgresColumnForm(property)
            let expected = form == .timestamptz ? "timestamp with time zone" : form.sqlType
            if let found = existing[property.name], found != expected {
                throw PostgresError(
                    .usage,
                    "column \(property.name) of table \(object.className) has type \(found), but the "
                        + "schema needs \(expected); rename the property or migrate the column by hand")
            }
        }
    }

    // MARK: - Plumbing

    /// Runs `body` on a pooled connection; a connection lost on a reused
    /// connection (the database restarted since it was opened) is retried
    /// once on a new one. Callers' bodies are idempotent transactions.
    private func withRetry<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        var retried = false
        while true {
            var retry = false
            do throws(PostgresError) {
                return try pool.withConnection { (db: PostgresConnection, fresh: Bool) throws(PostgresError) -> T in
                    do throws(PostgresError) {
                        return try body(db)
                    } catch {
                        if error.code == .connection {
                            // The other idle connections are most likely dead too.
                            pool.discardIdle()
                            // A fresh connection that fails is a real outage: no retry.
                            retry = !fresh && !retried
                        }
                        throw error
                    }
                }
            } catch {
                if retry {
                    retried = true
                    continue
                }
                throw error
            }
        }
    }

    /// Creates (or recreates, after a schema change) the session's staging table for `table`.
    private func ensureStage(_ table: Table, on db: PostgresConnection) throws(PostgresError) {
        guard db.sessionState[table.stageName] != table.signature else { return }
        let columns = table.columns.map { "\(quoted($0.name)) \($0.form.sqlType)" }.joined(separator: ", ")
        // ON COMMIT DELETE ROWS: each upload's transaction starts with an empty stage.
        try db.execute(
            """
            DROP TABLE IF EXISTS pg_temp.\(quoted(table.stageName));
            CREATE TEMPORARY TABLE \(quoted(table.stageName)) (\(columns)) ON COMMIT DELETE ROWS
            """)
        db.sessionState[table.stageName] = table.signature
    }

    /// `E'\\\\x…'::bytea`: hex digits only, safe to inline.
    private static func byteaLiteral(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out = Array("E'\\\\x".utf8)
        for byte in bytes { out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0xF)]) }
        out += Array("'::bytea".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    /// An escape-string literal `E'…'` of UTF-8 `text` (backslash and quote
    /// doubled), or nil if it is not valid UTF-8 or holds a NUL (then the
    /// caller binds it as a parameter).
    private static func textLiteral(_ text: [UInt8]) -> String? {
        guard !text.contains(0), let string = String(validating: text, as: UTF8.self) else { return nil }
        return "E'" + string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'"
    }

    private static func keyParameters(_ key: SegmentKey) -> [PostgresConnection.Value] {
        [.bytes(key.storeId.bytes), .text(String(Int64(bitPattern: key.segmentNumber)))]
    }

    private func sinkError(_ error: PostgresError, _ permanent: SinkError.Code) -> SinkError {
        let code: SinkError.Code = error.isTransient ? .unavailable : (error.sqlState == "53100" ? .full : permanent)
        let hint = error.isTransient ? "; retry later" : ""
        return SinkError(code, error.message + hint, databaseCode: nil, location: pool.displayName)
    }

    private func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
