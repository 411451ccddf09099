import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestTestSupport

/// The PostgreSQL sink's write path: COPY straight into the tables, and the
/// fall-back through the staging tables when an `_id` is already stored.
/// Against the real PostgreSQL that Scripts/test.sh starts on 127.0.0.1.
@Suite(
    "PostgreSQL sink COPY path", .serialized,
    .enabled(if: TestEnvironment.runs(ifAvailable: PostgresTestService.isAvailable), PostgresTestService.skipReason))
struct PostgresSinkCopyTests {
    private static let schema: Schema = {
        do {
            return try Schema([
                ObjectSchema(
                    className: "Event", kind: .asymmetric,
                    properties: [
                        Property(name: "_id", type: .objectId, isPrimaryKey: true),
                        Property(name: "name", type: .string),
                    ]),
                ObjectSchema(
                    className: "Note", kind: .asymmetric,
                    properties: [
                        Property(name: "_id", type: .objectId, isPrimaryKey: true),
                        Property(name: "text", type: .string),
                    ]),
            ])
        } catch {
            preconditionFailure("invalid test schema: \(error)")
        }
    }()

    private func event(_ id: ObjectId) -> SinkObject {
        SinkObject(collection: "Event", document: ["_id": .objectId(id), "name": .string("e")])
    }

    private func note(_ id: ObjectId) -> SinkObject {
        SinkObject(collection: "Note", document: ["_id": .objectId(id), "text": .string("n")])
    }

    @Test("a duplicate in the second collection rolls back the first collection's direct COPY; every object once")
    func duplicateInSecondCollection() throws {
        let database = try PostgresTestDatabase()
        let sink = try PostgresSink(connection: database.url)
        defer { sink.close() }
        try sink.migrate(to: Self.schema)
        let stored = ObjectId.generate()
        _ = try sink.write([note(stored)], receipt: SegmentKey(storeId: .random(), segmentNumber: 1)) { _ in [] }

        // Events copy directly, then the Note COPY hits the stored _id.
        let events = (0..<20).map { _ in ObjectId.generate() }
        let fresh = ObjectId.generate()
        let objects = events.map(event) + [note(fresh), note(stored)]
        let result = try sink.write(objects, receipt: SegmentKey(storeId: .random(), segmentNumber: 2)) { duplicates in
            Array("{\"duplicate\":\(duplicates.filter { $0 }.count)}".utf8)
        }
        guard case .written(let duplicates, let response) = result else {
            Issue.record("not written: \(result)")
            return
        }
        #expect(duplicates == Array(repeating: false, count: 21) + [true])
        #expect(String(decoding: response, as: UTF8.self) == #"{"duplicate":1}"#)
        #expect(try database.rows("SELECT count(*) FROM \"Event\"") == [["20"]])
        #expect(try database.rows("SELECT count(*) FROM \"Note\"") == [["2"]])
        #expect(try sink.collectionCounts().map(\.count) == [20, 2])

        // The same _id twice within one upload: the first is stored, the second is a duplicate.
        let twice = ObjectId.generate()
        let again = try sink.write([event(twice), event(twice)], receipt: SegmentKey(storeId: .random(), segmentNumber: 3)) { _ in [] }
        guard case .written(let flags, _) = again else {
            Issue.record("not written: \(again)")
            return
        }
        #expect(flags == [false, true])
        #expect(try database.rows("SELECT count(*) FROM \"Event\"") == [["21"]])
        #expect(try database.rows("SELECT count(*) FROM _dataingest_receipts") == [["3"]])
    }

    @Test("the stored response keeps quotes, backslashes and non-ASCII text exactly; a replay returns it")
    func responseRoundTrip() throws {
        let database = try PostgresTestDatabase()
        let sink = try PostgresSink(connection: database.url)
        defer { sink.close() }
        try sink.migrate(to: Self.schema)
        let bodies: [[UInt8]] = [
            Array(#"{"reason":"it's a \"quote\" and a \\ backslash, ünïcode ☃ \\x41"}"#.utf8),
            Array("E'\\\\'; DROP TABLE \"Event\"; --".utf8),
        ]
        for (number, body) in bodies.enumerated() {
            let key = SegmentKey(storeId: .random(), segmentNumber: UInt64(number + 1))
            let result = try sink.write([event(.generate())], receipt: key) { _ in body }
            #expect(result.response == body)
            #expect(try sink.receipt(for: key) == body)
            let replay = try sink.write([event(.generate())], receipt: key) { _ in [] }
            guard case .alreadyReceived(let stored) = replay else {
                Issue.record("a replay was written again")
                continue
            }
            #expect(stored == body)
        }
        #expect(try database.rows("SELECT count(*) FROM \"Event\"") == [["2"]])
    }

    @Test("the binary COPY format stores every value as the text format does, and refuses what it refuses")
    func binaryAndTextFormatsAgree() throws {
        let database = try PostgresTestDatabase()
        let sink = try PostgresSink(connection: database.url)
        defer { sink.close() }
        let common = [
            Property(name: "_id", type: .objectId, isPrimaryKey: true),
            Property(name: "name", type: .string, isOptional: true),
            Property(name: "flag", type: .bool, isOptional: true),
            Property(name: "n", type: .int, isOptional: true),
            Property(name: "d", type: .double, isOptional: true),
            Property(name: "blob", type: .data, isOptional: true),
            Property(name: "at", type: .date, isOptional: true),
            Property(name: "ref", type: .objectId, isOptional: true),
            Property(name: "u", type: .uuid, isOptional: true),
            Property(name: "any", type: .mixed, isOptional: true),
            Property(name: "tags", type: .string, collection: .list),
            Property(name: "attrs", type: .int, collection: .map),
        ]
        // A numeric column makes a table use the text format.
        let binaryColumns = common.map { (name: $0.name, form: PostgresColumnForm($0)) }
        #expect(PostgresCopyBinary.canEncode(binaryColumns))
        #expect(!PostgresCopyBinary.canEncode(binaryColumns + [("amount", .numeric)]))
        #expect(!PostgresCopyBinary.canEncode(binaryColumns + [("f", .real)]))
        let schema = try Schema([
            ObjectSchema(className: "Bin", kind: .asymmetric, properties: common),
            ObjectSchema(
                className: "Txt", kind: .asymmetric,
                properties: common + [Property(name: "amount", type: .decimal128, isOptional: true)]),
            // Scalars only, in another order: objects the schema check proves, read through their spans.
            ObjectSchema(className: "Located", kind: .asymmetric, properties: Array(common.prefix(9).reversed())),
        ])
        try sink.migrate(to: schema)
        let uuid: [UInt8] = Array(0..<16)
        let documents: [BSONDocument] = [
            [
                "name": .string("ünïcode ☃\t\\"), "flag": .bool(true), "n": .int32(-7), "d": .double(-0.0),
                "blob": .binary(BSONBinary(subtype: 2, bytes: [0, 0xFF])), "at": .datetime(-62_135_596_800_000),
                "ref": .objectId(.generate()), "u": .binary(BSONBinary(subtype: 4, bytes: uuid)),
                "any": .document(["x": .int64(1)]), "tags": .array([.string("a"), .null]), "attrs": .document(["k": .int32(1)]),
            ],
            [
                "name": .string(""), "flag": .bool(false), "n": .int64(.max), "d": .double(.nan), "blob": .binary(BSONBinary(bytes: [])),
                "at": .datetime(1_700_000_000_123), "any": .null, "tags": .array([]), "attrs": .document([:]),
            ],
            ["name": .null, "d": .int64(9_007_199_254_740_993), "at": .datetime(253_402_300_799_999), "any": .double(.infinity)],
            ["d": .int32(3), "n": .null, "flag": .null, "any": .string("x")],
        ]
        var objects: [SinkObject] = []
        for document in documents {
            let id = ObjectId.generate()
            for collection in ["Bin", "Txt"] {
                var copy = document
                copy["_id"] = .objectId(id)
                objects.append(SinkObject(collection: collection, document: copy))
            }
        }
        // The second document again (scalars only), with the spans the schema check records.
        let check = try #require(schema["Located"].map { ObjectSchema.QuickCheck($0) })
        var scalars = documents[1]
        for name in ["tags", "attrs", "any"] { scalars[name] = nil }
        scalars["_id"] = try objects[2].document["_id"]
        let bytes = scalars.bsonBytes()
        var spans = [BSONElementSpan](repeating: .absent, count: check.propertyNames.count)
        let proven = bytes.withUnsafeBytes { raw in spans.withUnsafeMutableBufferPointer { check.isCertainlyValid(bson: raw, spans: $0) } }
        #expect(proven)
        let located = [
            SinkObject(
                collection: "Located", bson: bytes,
                fields: SinkFields(storage: SinkFieldSpans(spans: spans, propertyLists: [check.propertyNames]), start: 0, list: 0))
        ]
        _ = try sink.write(objects + located, receipt: SegmentKey(storeId: .random(), segmentNumber: 1)) { _ in [] }
        let columns = common.map { "\"\($0.name)\"::text" }.joined(separator: ", ")
        let binary = try database.rows("SELECT \(columns) FROM \"Bin\" ORDER BY \"_id\"")
        let text = try database.rows("SELECT \(columns) FROM \"Txt\" ORDER BY \"_id\"")
        #expect(binary.count == documents.count)
        #expect(binary == text)
        #expect(binary.first?[4] == "-0")
        let scalarColumns = common.prefix(9).map { "\"\($0.name)\"::text" }.joined(separator: ", ")
        guard case .objectId(let id)? = try objects[2].document["_id"] else {
            Issue.record("no _id")
            return
        }
        #expect(
            try database.rows("SELECT \(scalarColumns) FROM \"Located\"")
                == (try database.rows("SELECT \(scalarColumns) FROM \"Bin\" WHERE \"_id\" = '\\x\(id.hex)'")))

        // Values the text format refuses are refused in binary too, and nothing is stored.
        for (bad, number) in [(["name": .string("a\u{0}b")] as BSONDocument, 2), (["at": .datetime(-62_135_596_800_001)], 3)] {
            var document = bad
            document["_id"] = .objectId(.generate())
            for collection in ["Bin", "Txt"] {
                #expect(throws: SinkError.self) {
                    try sink.write(
                        [SinkObject(collection: collection, document: document)],
                        receipt: SegmentKey(storeId: .random(), segmentNumber: UInt64(number))
                    ) { _ in [] }
                }
            }
        }
        #expect(try database.rows("SELECT count(*) FROM \"Bin\"") == [[String(documents.count)]])
    }
}
