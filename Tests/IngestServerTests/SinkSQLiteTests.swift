import Foundation
import IngestCore
import IngestSupport
import Testing
@testable import IngestServer
import IngestTestSupport

/// The SQLite sink on its own: tables, typed columns, duplicates, receipts,
/// additive migration, reopening.
@Suite("SQLite sink")
struct SinkSQLiteTests {
    static func schema(extra: [IngestCore.Property] = []) throws -> Schema {
        try Schema([
            ObjectSchema(
                className: "Reading", kind: .asymmetric,
                properties: [
                    IngestCore.Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    IngestCore.Property(name: "value", type: .double),
                    IngestCore.Property(name: "tags", type: .string, collection: .list),
                ] + extra),
            ObjectSchema(className: "Point", kind: .embedded, properties: [IngestCore.Property(name: "x", type: .int)]),
        ])
    }

    @Test("writes objects and a receipt in one transaction; duplicates and repeated receipts write nothing")
    func writeDuplicatesAndReceipts() throws {
        let directory = try TemporaryDirectory("sink")
        let path = directory.path + "/app.sqlite"
        let sink = try SQLiteSink(path: path)
        defer { sink.close() }
        try sink.migrate(to: try Self.schema())
        let ids = (0..<3).map { _ in ObjectId.generate() }
        let objects = ids.map {
            SinkObject(collection: "Reading", document: ["_id": .objectId($0), "value": .double(1.5), "tags": .array([.string("t")])])
        }
        let key = SegmentKey(storeId: .random(), segmentNumber: 5)
        #expect(try sink.receipt(for: key) == nil)
        let result = try sink.write(objects + [objects[0]], receipt: key) { duplicates in
            Array("dups=\(duplicates.filter { $0 }.count)".utf8)
        }
        guard case .written(let duplicates, let body) = result else {
            Issue.record("expected a write, got \(result)")
            return
        }
        #expect(duplicates == [false, false, false, true])
        #expect(body == Array("dups=1".utf8))
        #expect(try sink.receipt(for: key) == body)
        let again = try sink.write(objects, receipt: key) { _ in Array("second".utf8) }
        guard case .alreadyReceived(let stored) = again else {
            Issue.record("expected the stored receipt, got \(again)")
            return
        }
        #expect(stored == body)
        #expect(try sink.collectionCounts().map(\.count) == [3])
        #expect(
            try sqliteRows(path, "SELECT hex(_id), value, tags FROM Reading ORDER BY _id")
                == ids.sorted().map { ["\($0.hex.uppercased())", "1.5", #"["t"]"#] })
        #expect(try sqliteRows(path, "PRAGMA journal_mode") == [["wal"]])
    }

    @Test("a new database gets the configured page size; an existing one keeps its own; an invalid size is refused")
    func pageSize() throws {
        let directory = try TemporaryDirectory("sink")
        func write(_ sink: SQLiteSink, _ number: UInt64) throws {
            try sink.migrate(to: try Self.schema())
            _ = try sink.write(
                [SinkObject(collection: "Reading", document: ["_id": .objectId(.generate()), "value": .double(1)])],
                receipt: SegmentKey(storeId: .random(), segmentNumber: number)
            ) { _ in [] }
        }
        let fresh = directory.path + "/fresh.sqlite"
        do {
            let sink = try SQLiteSink(path: fresh)
            try write(sink, 1)
            sink.close()
        }
        #expect(try sqliteRows(fresh, "PRAGMA page_size") == [["16384"]])

        let small = directory.path + "/small.sqlite"
        var configuration = SQLiteSink.Configuration()
        configuration.pageSize = 4096
        do {
            let sink = try SQLiteSink(path: small, configuration: configuration)
            try write(sink, 1)
            sink.close()
        }
        // Reopened with the default: the pages stay 4096 bytes and writes go on.
        let reopened = try SQLiteSink(path: small)
        try write(reopened, 2)
        reopened.close()
        #expect(try sqliteRows(small, "PRAGMA page_size") == [["4096"]])
        #expect(try sqliteRows(small, "SELECT count(*) FROM Reading") == [["2"]])
        #expect(try sqliteRows(small, "PRAGMA integrity_check") == [["ok"]])

        for invalid in [0, 1000, 131_072] {
            configuration.pageSize = invalid
            let path = directory.path + "/invalid-\(invalid).sqlite"
            #expect {
                try SQLiteSink(path: path, configuration: configuration)
            } throws: { error in
                "\(error)".contains("power of two from 512 to 65536, not \(invalid)")
            }
            #expect(!FileManager.default.fileExists(atPath: path), "a refused configuration created \(path)")
        }
    }

    @Test("migration is additive and survives reopening; rows counted at open")
    func additiveMigration() throws {
        let directory = try TemporaryDirectory("sink")
        let path = directory.path + "/app.sqlite"
        do {
            let sink = try SQLiteSink(path: path)
            try sink.migrate(to: try Self.schema())
            _ = try sink.write(
                [SinkObject(collection: "Reading", document: ["_id": .objectId(.generate()), "value": .double(1)])],
                receipt: SegmentKey(storeId: .random(), segmentNumber: 1)
            ) { _ in [] }
            sink.close()
        }
        let sink = try SQLiteSink(path: path)
        defer { sink.close() }
        let grown = try Self.schema(extra: [
            IngestCore.Property(name: "where", type: .object, isOptional: true, objectClassName: "Point"),
            IngestCore.Property(name: "at", type: .date, isOptional: true),
        ])
        try sink.migrate(to: grown)
        #expect(try sink.collectionCounts().first?.count == 1)
        _ = try sink.write(
            [
                SinkObject(
                    collection: "Reading",
                    document: [
                        "_id": .objectId(.generate()), "value": .double(2), "where": .document(["x": .int64(4)]), "at": .datetime(99),
                    ])
            ], receipt: SegmentKey(storeId: .random(), segmentNumber: 2)
        ) { _ in [] }
        #expect(
            try sqliteRows(path, "SELECT value, \"where\", at FROM Reading ORDER BY value")
                == [["1.0", "nil", "nil"], ["2.0", #"{"x":4}"#, "99"]])
        let columns = try sqliteRows(path, "SELECT name, type FROM pragma_table_info('Reading')")
        #expect(columns.contains(["at", "INTEGER"]))
        #expect(columns.contains(["_id", "BLOB"]))
    }

    @Test("every BSON form is bound from the object's bytes into its column; invalid bytes write nothing")
    func bindsEveryFormFromBytes() throws {
        let directory = try TemporaryDirectory("sink")
        let path = directory.path + "/app.sqlite"
        let sink = try SQLiteSink(path: path)
        defer { sink.close() }
        try sink.migrate(
            to: try Self.schema(extra: [
                IngestCore.Property(name: "name", type: .string, isOptional: true),
                IngestCore.Property(name: "count", type: .int, isOptional: true),
                IngestCore.Property(name: "flag", type: .bool, isOptional: true),
                IngestCore.Property(name: "at", type: .date, isOptional: true),
                IngestCore.Property(name: "price", type: .decimal128, isOptional: true),
                IngestCore.Property(name: "ref", type: .objectId, isOptional: true),
                IngestCore.Property(name: "blob", type: .data, isOptional: true),
                IngestCore.Property(name: "serial", type: .uuid, isOptional: true),
                IngestCore.Property(name: "where", type: .object, isOptional: true, objectClassName: "Point"),
                IngestCore.Property(name: "any", type: .mixed, isOptional: true),
            ]))
        let id = ObjectId.generate()
        let ref = ObjectId.generate()
        // Fields out of column order, an unknown field, a repeated field (the first wins) and
        // the old binary subtype (stored without its inner length).
        let document: BSONDocument = [
            "value": .double(-2.5), "_id": .objectId(id), "name": "grüße", "count": .int32(-7), "flag": .bool(true),
            "at": .datetime(1_700_000_000_123), "price": .decimal128(try Decimal128(parsing: "12.50")), "ref": .objectId(ref),
            "blob": .binary(BSONBinary(subtype: BSONBinary.Subtype.binaryOld, bytes: [0xAB, 0xCD])),
            "serial": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(0..<16))),
            "where": .document(["x": .int64(4)]), "any": .array([.int32(1), "two"]), "tags": .array([]),
            "unknown": "ignored", "name": "second",
        ]
        let emptyId = ObjectId.generate()
        let empty: BSONDocument = [
            "_id": .objectId(emptyId), "value": .double(0), "name": "", "blob": .binary(BSONBinary(bytes: [])),
            "count": .null, "any": .null,
        ]
        _ = try sink.write(
            [SinkObject(collection: "Reading", document: document), SinkObject(collection: "Reading", document: empty)],
            receipt: SegmentKey(storeId: .random(), segmentNumber: 1)
        ) { _ in [] }
        let rows = try sqliteRows(
            path,
            """
            SELECT hex(_id), value, name, count, flag, at, price, hex(ref), hex(blob), hex(serial), "where", "any", tags,
                   typeof(name), typeof(blob), typeof(count), typeof("any") FROM Reading ORDER BY _id
            """)
        #expect(
            rows == [
                [
                    id.hex.uppercased(), "-2.5", "grüße", "-7", "1", "1700000000123", try Decimal128(parsing: "12.50").description,
                    ref.hex.uppercased(), "ABCD",
                    "000102030405060708090A0B0C0D0E0F", #"{"x":4}"#, #"[1,"two"]"#, "[]", "text", "blob", "integer", "text",
                ],
                [
                    emptyId.hex.uppercased(), "0.0", "", "nil", "nil", "nil", "nil", "", "", "", "nil", "nil", "nil",
                    "text", "blob", "null", "null",
                ],
            ])

        // Bytes that are not one BSON document fail the write, which leaves nothing behind.
        var broken = (["_id": .objectId(.generate()), "value": .double(1)] as BSONDocument).bsonBytes()
        broken[broken.count - 1] = 7
        let key = SegmentKey(storeId: .random(), segmentNumber: 2)
        #expect(throws: SinkError.self) {
            try sink.write(
                [
                    SinkObject(collection: "Reading", document: ["_id": .objectId(.generate()), "value": .double(3)]),
                    SinkObject(collection: "Reading", bson: broken),
                ], receipt: key
            ) { _ in [] }
        }
        #expect(try sink.receipt(for: key) == nil)
        #expect(try sqliteRows(path, "SELECT count(*) FROM Reading") == [["2"]])
    }

    @Test("a closed sink throws closed; an unwritable path throws open")
    func errors() throws {
        let directory = try TemporaryDirectory("sink")
        let sink = try SQLiteSink(path: directory.path + "/a.sqlite")
        sink.close()
        #expect(throws: SinkError.self) { try sink.receipt(for: SegmentKey(storeId: .random(), segmentNumber: 1)) }
        #expect(throws: SinkError.self) { try SQLiteSink(path: "/proc/definitely/not/here.sqlite") }
    }
}

/// Group commit: writes that queue while one commits go into the next
/// transaction together, each with its own savepoint.
@Suite("SQLite sink group commit")
struct SinkSQLiteGroupCommitTests {
    @Test("queued writes commit in one transaction; a failing one is rolled back alone; a repeated key answers from the receipt")
    func queuedWritesShareATransaction() throws {
        let directory = try TemporaryDirectory("sink")
        let path = directory.path + "/app.sqlite"
        let sink = try SQLiteSink(path: path)
        defer { sink.close() }
        try sink.migrate(to: try SinkSQLiteTests.schema())

        // The first write's transaction waits (holding the lock) until the
        // other writes have queued behind it.
        let sizes = LockedBox<[Int]>([])
        let release = DispatchSemaphore(value: 0)
        sink.onTransaction.withLock {
            $0 = { size in
                let first = sizes.withLock { sizes -> Bool in
                    sizes.append(size)
                    return sizes.count == 1
                }
                if first { _ = release.wait(timeout: .now() + 30) }
            }
        }
        func reading(_ id: ObjectId) -> SinkObject {
            SinkObject(collection: "Reading", document: ["_id": .objectId(id), "value": .double(1)])
        }
        var broken = (["_id": .objectId(.generate()), "value": .double(1)] as BSONDocument).bsonBytes()
        broken[broken.count - 1] = 7
        let shared = ObjectId.generate()
        let store = SegmentStoreID.random()
        // 0: holds the first transaction; 1, 2: good (2 repeats 1's `shared` id);
        // 3: an invalid object; 4: the same segment as 1.
        let writes: [(key: SegmentKey, objects: [SinkObject])] = [
            (SegmentKey(storeId: store, segmentNumber: 1), [reading(.generate())]),
            (SegmentKey(storeId: store, segmentNumber: 2), [reading(shared), reading(.generate())]),
            (SegmentKey(storeId: store, segmentNumber: 3), [reading(.generate()), reading(shared)]),
            (SegmentKey(storeId: store, segmentNumber: 4), [reading(.generate()), SinkObject(collection: "Reading", bson: broken)]),
            (SegmentKey(storeId: store, segmentNumber: 2), [reading(.generate())]),
        ]
        let results = LockedBox<[Int: Result<SinkWriteResult, SinkError>]>([:])
        let group = DispatchGroup()
        // Threads of their own: the writes block on the sink's lock, and a
        // dispatch queue's pool need not start another thread for each.
        func start(_ index: Int) {
            group.enter()
            Thread {
                let write = writes[index]
                let result = Result { () throws(SinkError) in
                    try sink.write(write.objects, receipt: write.key) { duplicates in Array("\(index):\(duplicates)".utf8) }
                }
                results.withLock { $0[index] = result }
                group.leave()
            }.start()
        }
        start(0)
        let deadline = Date().addingTimeInterval(30)
        while sizes.withLock({ $0.isEmpty }) && Date() < deadline { usleep(1_000) }
        // Writes 1…4 queue in order behind it (2 and 4 depend on 1 being ahead).
        for index in 1...4 {
            start(index)
            usleep(200_000)
        }
        release.signal()
        #expect(group.wait(timeout: .now() + 30) == .success)

        let done = results.withLock { $0 }
        #expect(sizes.withLock { $0 } == [1, 4])
        guard case .success(.written(_, let body0))? = done[0] else {
            Issue.record("write 0: \(String(describing: done[0]))")
            return
        }
        #expect(body0 == Array("0:[false]".utf8))
        guard case .success(.written(_, let body1))? = done[1] else {
            Issue.record("write 1: \(String(describing: done[1]))")
            return
        }
        #expect(body1 == Array("1:[false, false]".utf8))
        guard case .success(.written(_, let body2))? = done[2] else {
            Issue.record("write 2: \(String(describing: done[2]))")
            return
        }
        #expect(body2 == Array("2:[false, true]".utf8))
        guard case .failure(let error)? = done[3] else {
            Issue.record("write 3: \(String(describing: done[3]))")
            return
        }
        #expect(error.code == .statement)
        guard case .success(.alreadyReceived(let stored))? = done[4] else {
            Issue.record("write 4: \(String(describing: done[4]))")
            return
        }
        #expect(stored == body1)

        // Writes 0, 1 and 2 are stored with their receipts, 3 left nothing.
        #expect(try sqliteRows(path, "SELECT count(*) FROM Reading") == [["4"]])
        #expect(try sink.collectionCounts().map(\.count) == [4])
        #expect(try sink.receipt(for: writes[3].key) == nil)
        #expect(try sink.receipt(for: writes[2].key) == body2)
        #expect(try sqliteRows(path, "SELECT count(*) FROM _dataingest_receipts") == [["3"]])
    }
}

/// Objects the upload handler proved valid carry where their fields are
/// (`SinkObject.fields`); the sink reads them there instead of walking the
/// document again, and must store exactly what the walk stores.
@Suite("SQLite sink: fields located by the schema check")
struct SinkSQLiteFieldsTests {
    @Test("located fields store the same row as the walk; spans that do not fit fall back to the walk")
    func locatedFieldsMatchTheWalk() throws {
        let directory = try TemporaryDirectory("sink")
        let path = directory.path + "/app.sqlite"
        let sink = try SQLiteSink(path: path)
        defer { sink.close() }
        // The properties in another order than the document's fields.
        let properties = [
            IngestCore.Property(name: "count", type: .int, isOptional: true),
            IngestCore.Property(name: "_id", type: .objectId, isPrimaryKey: true),
            IngestCore.Property(name: "name", type: .string),
            IngestCore.Property(name: "flag", type: .bool, isOptional: true),
            IngestCore.Property(name: "at", type: .date, isOptional: true),
            IngestCore.Property(name: "price", type: .decimal128, isOptional: true),
            IngestCore.Property(name: "ref", type: .objectId, isOptional: true),
            IngestCore.Property(name: "blob", type: .data, isOptional: true),
            IngestCore.Property(name: "serial", type: .uuid, isOptional: true),
            IngestCore.Property(name: "value", type: .double, isOptional: true),
            IngestCore.Property(name: "small", type: .float, isOptional: true),
        ]
        let schema = try Schema([
            ObjectSchema(className: "Walked", kind: .asymmetric, properties: properties),
            ObjectSchema(className: "Located", kind: .asymmetric, properties: properties),
        ])
        try sink.migrate(to: schema)
        let check = try #require(schema["Located"].map { ObjectSchema.QuickCheck($0) })
        let documents: [BSONDocument] = [
            [
                "_id": .objectId(.generate()), "name": "grüße", "count": .int32(-7), "flag": .bool(true), "at": .datetime(-1),
                "price": .decimal128(try Decimal128(parsing: "12.50")), "ref": .objectId(.generate()),
                "blob": .binary(BSONBinary(bytes: [0, 0xAB])),
                "serial": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(0..<16))),
                "value": .double(-0.5), "small": .double(1.25),
            ],
            ["name": "", "_id": .objectId(.generate()), "count": .null, "value": .double(3)],
        ]
        var walked: [SinkObject] = []
        var located: [SinkObject] = []
        var spans: [BSONElementSpan] = []
        for document in documents {
            let bytes = document.bsonBytes()
            let start = spans.count
            spans += Array(repeating: BSONElementSpan.absent, count: properties.count)
            let proven = bytes.withUnsafeBytes { raw in
                spans.withUnsafeMutableBufferPointer {
                    check.isCertainlyValid(bson: raw, spans: UnsafeMutableBufferPointer(rebasing: $0[start...]))
                }
            }
            #expect(proven)
            walked.append(SinkObject(collection: "Walked", bson: bytes))
            located.append(SinkObject(collection: "Located", bson: bytes))  // fields below, once every span is known
        }
        let storage = SinkFieldSpans(spans: spans, propertyLists: [check.propertyNames])
        for index in located.indices {
            located[index].fields = SinkFields(storage: storage, start: index * properties.count, list: 0)
        }
        // A span past the end of its object's bytes: that object goes through the walk.
        var broken = spans
        broken[properties.count + 2] = BSONElementSpan(start: 4, valueOffset: 9, end: 10_000)
        let brokenStorage = SinkFieldSpans(spans: broken, propertyLists: [check.propertyNames])
        located[1].fields = SinkFields(storage: brokenStorage, start: properties.count, list: 0)

        _ = try sink.write(walked, receipt: SegmentKey(storeId: .random(), segmentNumber: 1)) { _ in [] }
        _ = try sink.write(located, receipt: SegmentKey(storeId: .random(), segmentNumber: 2)) { _ in [] }
        let columns = properties.map { "quote(\"\($0.name)\")" }.joined(separator: ", ")
        let fromWalk = try sqliteRows(path, "SELECT \(columns) FROM Walked ORDER BY _id")
        let fromSpans = try sqliteRows(path, "SELECT \(columns) FROM Located ORDER BY _id")
        #expect(fromWalk.count == 2)
        #expect(fromSpans == fromWalk)
    }
}

/// Prepared objects go into a table 100 at a time (one `INSERT OR FAIL` of
/// many rows); a duplicate `_id` stops such a statement, and each object
/// must still be stored once and reported as a duplicate or not at its own
/// index.
@Suite("SQLite sink: multi-row inserts")
struct SinkSQLiteMultiRowTests {
    /// The sink suite's Reading with a `label`, and a second collection.
    static func schema() throws -> Schema {
        let readings = try SinkSQLiteTests.schema(extra: [IngestCore.Property(name: "label", type: .string, isOptional: true)])
        return try Schema(
            readings.objectSchemas + [
                ObjectSchema(
                    className: "Sample", kind: .asymmetric,
                    properties: [
                        IngestCore.Property(name: "_id", type: .objectId, isPrimaryKey: true),
                        IngestCore.Property(name: "count", type: .int),
                    ])
            ])
    }

    /// Calls `body` with a sink (and its file's path) in a folder of its
    /// own, `schema` migrated; closes the sink and removes the folder after.
    static func withSink(schema: Schema? = nil, _ body: (SQLiteSink, String) throws -> Void) throws {
        let directory = try TemporaryDirectory("sink")
        let path = directory.path + "/app.sqlite"
        let sink = try SQLiteSink(path: path)
        defer { sink.close() }
        try sink.migrate(to: try schema ?? Self.schema())
        try withExtendedLifetime(directory) { try body(sink, path) }
    }

    /// A write's duplicate flags; any other result is recorded as an issue (nil).
    static func duplicates(of result: SinkWriteResult, sourceLocation: SourceLocation = #_sourceLocation) -> [Bool]? {
        guard case .written(let duplicates, _) = result else {
            Issue.record("expected a write, got \(result)", sourceLocation: sourceLocation)
            return nil
        }
        return duplicates
    }

    static func reading(_ id: ObjectId, _ value: Double) -> SinkObject {
        SinkObject(
            collection: "Reading",
            document: [
                "_id": .objectId(id), "value": .double(value), "label": .string("r\(Int(value))"),
                "tags": .array([.string("t\(Int(value))")]),
            ])
    }

    @Test("stored and repeated ids anywhere in a 100-row statement are reported at their index; every other object is stored once")
    func duplicatesStopAStatement() throws {
        try Self.withSink { sink, path in
            #expect(sink.rowsPerInsert(into: "Reading") == 100)
            let store = SegmentStoreID.random()

            // 350 objects: Readings 0..<250, Samples 250..<300 (a run shorter than
            // one statement), Readings 300..<350.
            let ids = (0..<350).map { _ in ObjectId.generate() }
            let storedBefore = [0, 57, 99, 100, 230, 310]
            _ = try sink.write(storedBefore.map { Self.reading(ids[$0], -1) }, receipt: SegmentKey(storeId: store, segmentNumber: 1)) { _ in
                []
            }

            var objects: [SinkObject] = []
            for index in 0..<350 {
                if (250..<300).contains(index) {
                    objects.append(
                        SinkObject(collection: "Sample", document: ["_id": .objectId(ids[index]), "count": .int64(Int64(index))]))
                } else {
                    objects.append(Self.reading(ids[index], Double(index)))
                }
            }
            // Repeats inside the upload: 120 repeats 110 (the same statement),
            // 201 repeats 199 (the next one), 340 repeats 5.
            let repeats = [120: 110, 201: 199, 340: 5]
            for (index, original) in repeats { objects[index] = Self.reading(ids[original], Double(index)) }

            let result = try sink.write(objects, receipt: SegmentKey(storeId: store, segmentNumber: 2)) { _ in [] }
            guard let duplicates = Self.duplicates(of: result) else { return }
            let expected = Set(storedBefore).union(repeats.keys)
            #expect(duplicates == (0..<350).map { expected.contains($0) })

            // Stored once each: the earlier rows keep their values, the repeats left nothing.
            var readings: [[String]] = storedBefore.map { [ids[$0].hex.uppercased(), "-1.0", "r-1"] }
            for index in 0..<350 where !(250..<300).contains(index) && !expected.contains(index) {
                readings.append([ids[index].hex.uppercased(), "\(Double(index))", "r\(index)"])
            }
            #expect(try sqliteRows(path, "SELECT hex(_id), value, label FROM Reading ORDER BY _id") == readings.sorted { $0[0] < $1[0] })
            #expect(
                try sqliteRows(path, "SELECT hex(_id), count FROM Sample ORDER BY _id")
                    == (250..<300).map { [ids[$0].hex.uppercased(), "\($0)"] }.sorted { $0[0] < $1[0] })
            #expect(try sqliteRows(path, "SELECT tags FROM Reading WHERE value = 42") == [[#"["t42"]"#]])
            #expect(try sink.collectionCounts().map(\.count) == [readings.count, 50])
        }
    }

    @Test("an upload of objects that are all stored already writes nothing and reports every one")
    func everyObjectADuplicate() throws {
        try Self.withSink { sink, path in
            let store = SegmentStoreID.random()
            let ids = (0..<330).map { _ in ObjectId.generate() }
            _ = try sink.write(ids.map { Self.reading($0, 1) }, receipt: SegmentKey(storeId: store, segmentNumber: 1)) { _ in [] }

            let result = try sink.write(ids.map { Self.reading($0, 2) }, receipt: SegmentKey(storeId: store, segmentNumber: 2)) { _ in [] }
            guard let duplicates = Self.duplicates(of: result) else { return }
            #expect(duplicates == Array(repeating: true, count: 330))
            #expect(try sqliteRows(path, "SELECT count(*), min(value), max(value) FROM Reading") == [["330", "1.0", "1.0"]])
            #expect(try sink.collectionCounts().map(\.count) == [330, 0])
        }
    }

    @Test("a table of 62 columns gets 66 rows per statement (4,096 parameters at most); its duplicates are found the same way")
    func wideTable() throws {
        let names = (0..<60).map { "p\($0)" }
        let schema = try Schema([
            ObjectSchema(
                className: "Wide", kind: .asymmetric,
                properties: [IngestCore.Property(name: "_id", type: .objectId, isPrimaryKey: true)]
                    + names.map { IngestCore.Property(name: $0, type: .double) })
        ])
        try Self.withSink(schema: schema) { sink, path in
            #expect(sink.rowsPerInsert(into: "Wide") == 66)
            func wide(_ id: ObjectId, _ value: Double) -> SinkObject {
                var document: BSONDocument = ["_id": .objectId(id)]
                for name in names { document[name] = .double(value) }
                return SinkObject(collection: "Wide", document: document)
            }
            let store = SegmentStoreID.random()
            let ids = (0..<200).map { _ in ObjectId.generate() }
            let storedBefore = [0, 65, 66, 131]
            _ = try sink.write(storedBefore.map { wide(ids[$0], -1) }, receipt: SegmentKey(storeId: store, segmentNumber: 1)) { _ in [] }
            let result = try sink.write(
                ids.indices.map { wide(ids[$0], Double($0)) }, receipt: SegmentKey(storeId: store, segmentNumber: 2)
            ) {
                _ in []
            }
            guard let duplicates = Self.duplicates(of: result) else { return }
            #expect(duplicates == ids.indices.map { storedBefore.contains($0) })
            #expect(try sqliteRows(path, "SELECT count(*), sum(p59 = -1), sum(p0 = 199) FROM Wide") == [["200", "4", "1"]])
        }
    }

    @Test("an invalid object after a full statement rolls the whole write back")
    func invalidObjectRollsBack() throws {
        try Self.withSink { (sink, path) throws in
            var objects = (0..<250).map { Self.reading(.generate(), Double($0)) }
            var broken = objects[180].bson
            broken[broken.count - 1] = 7
            objects[180] = SinkObject(collection: "Reading", bson: broken)
            let key = SegmentKey(storeId: .random(), segmentNumber: 1)
            #expect(throws: SinkError.self) { try sink.write(objects, receipt: key) { _ in [] } }
            #expect(try sqliteRows(path, "SELECT count(*) FROM Reading") == [["0"]])
            #expect(try sink.receipt(for: key) == nil)
            #expect(try sink.collectionCounts().map(\.count) == [0, 0])
        }
    }
}
