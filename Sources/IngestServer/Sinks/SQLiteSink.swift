#if canImport(Glibc)
import Glibc
#endif
import CSQLite
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
/// time, so inserts append at the end of the B-tree.
// @unchecked Sendable: all mutable state (the connection, cached statements,
// table layouts, counts) is only touched while holding `lock`.
package final class SQLiteSink: Sink, ReceiptStore, @unchecked Sendable {
    /// Settings of the SQLite sink, each with a documented default.
    package struct Configuration: Sendable {
        /// `PRAGMA synchronous`: `FULL` (default) makes an acknowledged upload
        /// survive power loss; `NORMAL` survives process crashes only but
        /// syncs less often.
        package var synchronous: String = "FULL"
        /// Milliseconds to wait for a lock held by another process before
        /// answering busy (503). Default 5000.
        package var busyTimeoutMilliseconds: Int32 = 5000

        /// Creates the default configuration.
        package init() {}
    }

    /// The database file.
    package let path: String
    package var description: String { "sqlite:\(path)" }

    private let lock = Lock()
    private var db: OpaquePointer?
    private var tables: [String: Table] = [:]
    private var statements: [String: OpaquePointer] = [:]

    /// The name of the receipts table (reserved: no collection may use it).
    package static let receiptsTable = "_dataingest_receipts"

    /// A collection table's known columns and its insert statement.
    struct Table {
        var name: String
        /// Column name → storage form, in creation order.
        var columns: [(name: String, form: ColumnForm)]
        var count: Int
        var insertSQL: String
        /// The column names, matched against BSON keys without Strings.
        var keys: BSONKeyTable
        /// `columns[i].form`, without the names.
        var forms: [ColumnForm]

        init(name: String, columns: [(name: String, form: ColumnForm)], count: Int, insertSQL: String) {
            self.name = name
            self.columns = columns
            self.count = count
            self.insertSQL = insertSQL
            keys = BSONKeyTable(columns.map(\.name))
            forms = columns.map(\.form)
        }
    }

    /// Opens (creating if needed) the database at `path` in WAL mode and
    /// creates the receipts table.
    ///
    /// - Throws: ``SinkError`` `.open` if the file cannot be opened or WAL
    ///   cannot be enabled.
    package init(path: String, configuration: Configuration = Configuration()) throws(SinkError) {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? PrivateFiles.makeDirectory(directory)   // 0700, like the state directory
        }
        // Created 0600 before SQLite opens it: SQLite gives -wal and -shm its mode.
        try? PrivateFiles.createFile(path)
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw SinkError(.open, "cannot open the SQLite sink: \(message); check the directory exists and is writable",
                            databaseCode: rc, location: path)
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, configuration.busyTimeoutMilliseconds)
        do throws(SinkError) {
            // journal_mode answers with the mode in effect: WAL may be refused.
            let mode = try queryText("PRAGMA journal_mode=WAL")
            guard mode?.lowercased() == "wal" else {
                throw SinkError(.open, "the SQLite sink could not switch to WAL (journal mode is \(mode ?? "unknown")); "
                                + "put the database on a local file system", location: path)
            }
            let synchronous = ["OFF", "NORMAL", "FULL", "EXTRA"].contains(configuration.synchronous.uppercased())
                ? configuration.synchronous.uppercased() : "FULL"
            try execute("PRAGMA synchronous=\(synchronous)")
            try execute("""
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
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    // MARK: - Sink

    package func migrate(to schema: Schema) throws(SinkError) {
        try lock.withLock { () throws(SinkError) in
            for object in schema.objectSchemas where object.kind == .asymmetric {
                try migrateLocked(object)
            }
        }
    }

    package func receipt(for key: SegmentKey) throws(SinkError) -> [UInt8]? {
        try lock.withLock { () throws(SinkError) in try receiptLocked(key) }
    }

    package func write(_ objects: [SinkObject], receipt key: SegmentKey,
                      response: ([Bool]) -> [UInt8]) throws(SinkError) -> SinkWriteResult {
        try write(objects, receipt: key, objectCount: objects.count, response: response)
    }

    /// Stores only a receipt (ClickHouse keeps its receipts here): `objectCount`
    /// objects of the segment went to the other sink.
    package func storeReceipt(for key: SegmentKey, objectCount: Int, response: [UInt8]) throws(SinkError) -> SinkWriteResult {
        try write([], receipt: key, objectCount: objectCount) { _ in response }
    }

    private func write(_ objects: [SinkObject], receipt key: SegmentKey, objectCount: Int,
                       response: ([Bool]) -> [UInt8]) throws(SinkError) -> SinkWriteResult {
        try lock.withLock { () throws(SinkError) in
            try execute("BEGIN IMMEDIATE")
            var added: [String: Int] = [:]
            do throws(SinkError) {
                // Checked inside the write transaction: of two racing uploads of
                // one segment, the second sees the first one's receipt.
                if let stored = try receiptLocked(key) {
                    try execute("COMMIT")
                    return .alreadyReceived(response: stored)
                }
                let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
                var duplicates = [Bool](repeating: false, count: objects.count)
                // Consecutive objects mostly share a collection: look its table up once per run.
                var current: (name: String, table: Table, statement: OpaquePointer)?
                var run = 0   // objects inserted into `current` since it was looked up
                for (index, object) in objects.enumerated() {
                    if current?.name != object.collection {
                        if let current { added[current.name, default: 0] += run }
                        run = 0
                        guard let table = tables[object.collection] else {
                            throw SinkError(.migration, "no table for collection \(object.collection); the schema was not migrated",
                                            location: path)
                        }
                        current = (object.collection, table, try prepared(table.insertSQL))
                    }
                    let inserted = try insertLocked(object, into: current!.table, with: current!.statement, now: now)
                    duplicates[index] = !inserted
                    if inserted { run += 1 }
                }
                if let current { added[current.name, default: 0] += run }
                let body = response(duplicates)
                let statement = try prepared("""
                    INSERT INTO "\(Self.receiptsTable)" (store_id, segment_number, received_at, object_count, response)
                    VALUES (?, ?, ?, ?, ?)
                    """)
                defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
                bindBlob(statement, 1, key.storeId.bytes)
                sqlite3_bind_int64(statement, 2, Int64(bitPattern: key.segmentNumber))
                sqlite3_bind_int64(statement, 3, now)
                sqlite3_bind_int64(statement, 4, Int64(objectCount))
                body.withUnsafeBytes { raw in
                    _ = sqlite3_bind_text(statement, 5, raw.baseAddress?.assumingMemoryBound(to: CChar.self),
                                          Int32(raw.count), dataingest_sqlite_transient())
                }
                try step(statement, "INSERT INTO receipts")
                try execute("COMMIT")
                for (collection, count) in added { tables[collection]?.count += count }
                return .written(duplicates: duplicates, response: body)
            } catch {
                if let db, sqlite3_get_autocommit(db) == 0 { sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
                throw error
            }
        }
    }

    /// Counted at start-up, then kept up to date by this sink's own writes.
    package var countsAreInMemory: Bool { true }

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
            try execute("""
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
        let count: Int
        if let known = tables[name]?.count { count = known } else { count = try countRows(name) }
        if let old = tables[name]?.insertSQL, old != insertSQL, let statement = statements.removeValue(forKey: old) {
            sqlite3_finalize(statement)
        }
        tables[name] = Table(name: name, columns: columns, count: count, insertSQL: insertSQL)
    }

    private func columnNames(of table: String) throws(SinkError) -> [String] {
        var names: [String] = []
        try query("PRAGMA table_info(\(quoted(table)))") { statement in
            if let text = sqlite3_column_text(statement, 1) { names.append(String(cString: text)) }
        }
        return names
    }

    private func countRows(_ table: String) throws(SinkError) -> Int {
        var count = 0
        try query("SELECT count(*) FROM \(quoted(table))") { count = Int(sqlite3_column_int64($0, 0)) }
        return count
    }

    // MARK: - Writing

    /// Inserts one object, bound straight from its BSON bytes; returns false
    /// if its `_id` was already stored.
    private func insertLocked(_ object: SinkObject, into table: Table, with statement: OpaquePointer,
                              now: Int64) throws(SinkError) -> Bool {
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        let keys = table.keys
        let forms = table.forms
        // Texts and blobs are bound SQLITE_STATIC from the object's bytes: the
        // statement is stepped inside this closure, and reset (unbound) after it.
        let outcome = object.bson.withUnsafeBytes { raw -> Result<Void, SinkError> in
            var bound = BoundColumns()
            var position = 0
            do {
                try BSONDocument.forEachElement(in: raw) { element in
                    defer { position += 1 }
                    // Clients write fields in schema order: the same position is tried first.
                    guard let offset = keys.index(of: element, hint: position) else { return }   // not a column: ignored
                    // The first field of a name wins, as `document[name]` finds it.
                    guard bound.insert(offset) else { return }
                    // Parameter 1 is _id, 2 is _ingested_at, then the properties.
                    try bind(element, form: forms[offset], to: statement, at: Int32(offset == 0 ? 1 : offset + 2))
                }
            } catch let error as BSONError {
                return .failure(SinkError(.statement, "an object of \(object.collection) is not a valid BSON document: \(error.message)",
                                          location: path))
            } catch {
                return .failure(SinkError(.statement, "an object of \(object.collection) cannot be bound: \(error)", location: path))
            }
            sqlite3_bind_int64(statement, 2, now)
            return Result { () throws(SinkError) in try step(statement, "INSERT INTO \(table.name)") }
        }
        try outcome.get()
        return sqlite3_changes(db) > 0
    }

    /// Binds one element (absent columns stay NULL).
    private func bind(_ element: BSONElement, form: ColumnForm, to statement: OpaquePointer, at index: Int32) throws(BSONError) {
        if form == .json {
            bindText(statement, index, try element.value().extendedJSON(.relaxed))
            return
        }
        switch element.type {
        case .null, .undefined: sqlite3_bind_null(statement, index)
        case .bool: sqlite3_bind_int64(statement, index, element.bool == true ? 1 : 0)
        case .int32, .int64: sqlite3_bind_int64(statement, index, element.integer ?? 0)
        case .double: sqlite3_bind_double(statement, index, element.double ?? 0)
        case .datetime: sqlite3_bind_int64(statement, index, element.datetime ?? 0)
        case .string: bindStatic(statement, index, element.stringBytes, text: true)
        case .objectId: bindStatic(statement, index, element.objectIdBytes, text: false)
        case .binary: bindStatic(statement, index, element.binaryPayload, text: false)
        case .decimal128: bindText(statement, index, element.decimal128?.description ?? "")
        default: bindText(statement, index, try element.value().extendedJSON(.relaxed))
        }
    }

    /// Binds bytes that stay valid until the statement is reset (SQLITE_STATIC).
    private func bindStatic(_ statement: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer?, text: Bool) {
        guard let bytes else { return }
        // SQLite reads a NULL pointer as NULL: an empty value needs a valid address.
        let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
        if text {
            sqlite3_bind_text(statement, index, base?.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
        } else {
            sqlite3_bind_blob(statement, index, base, Int32(bytes.count), nil)
        }
    }

    private func bindText(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        sqlite3_bind_text(statement, index, text, Int32(text.utf8.count), dataingest_sqlite_transient())
    }

    private func bindBlob(_ statement: OpaquePointer, _ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                  Int32(raw.count), dataingest_sqlite_transient())
        }
    }

    private func receiptLocked(_ key: SegmentKey) throws(SinkError) -> [UInt8]? {
        let statement = try prepared("SELECT response FROM \"\(Self.receiptsTable)\" WHERE store_id = ? AND segment_number = ?")
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        bindBlob(statement, 1, key.storeId.bytes)
        sqlite3_bind_int64(statement, 2, Int64(bitPattern: key.segmentNumber))
        let rc = sqlite3_step(statement)
        if rc == SQLITE_ROW {
            let count = Int(sqlite3_column_bytes(statement, 0))
            guard let text = sqlite3_column_text(statement, 0) else { return [] }
            return Array(UnsafeRawBufferPointer(start: text, count: count))
        }
        guard rc == SQLITE_DONE else { throw failure(rc, "SELECT receipt") }
        return nil
    }

    // MARK: - SQLite plumbing

    private func handle() throws(SinkError) -> OpaquePointer {
        guard let db else { throw SinkError(.closed, "the SQLite sink is closed", location: path) }
        return db
    }

    private func execute(_ sql: String) throws(SinkError) {
        let db = try handle()
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc, String(sql.prefix(60))) }
    }

    private func queryText(_ sql: String) throws(SinkError) -> String? {
        var result: String?
        try query(sql) { statement in
            if let text = sqlite3_column_text(statement, 0) { result = String(cString: text) }
        }
        return result
    }

    /// Runs an uncached statement and calls `row` for each result row.
    private func query(_ sql: String, row: (OpaquePointer) -> Void) throws(SinkError) {
        let db = try handle()
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc, String(sql.prefix(60))) }
        defer { sqlite3_finalize(statement) }
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw failure(rc, String(sql.prefix(60))) }
            row(statement)
        }
    }

    private func prepared(_ sql: String) throws(SinkError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        let db = try handle()
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc, String(sql.prefix(60))) }
        statements[sql] = statement
        return statement
    }

    // `what` is an autoclosure: the per-object insert must not build its message unless it fails.
    private func step(_ statement: OpaquePointer, _ what: @autoclosure () -> String) throws(SinkError) {
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw failure(rc, what()) }
    }

    private func failure(_ rc: Int32, _ what: String) -> SinkError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        let code: SinkError.Code
        switch rc & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: code = .busy
        case SQLITE_FULL: code = .full
        default: code = .statement
        }
        return SinkError(code, "\(message) (in: \(what))", databaseCode: rc, location: path)
    }

    private func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
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

/// Which columns of one insert are bound already: a bit set, without
/// allocating for tables of up to 128 columns.
struct BoundColumns {
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
