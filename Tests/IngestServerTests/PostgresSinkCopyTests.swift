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
}
