#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestSupport
import IngestTestSupport

/// The ClickHouse sink against the real ClickHouse (Debian's 18.16) that
/// Scripts/test.sh starts on 127.0.0.1. Serialized: the cluster test owns
/// the shared shard databases.
@Suite(
    "ClickHouse sink", .serialized,
    .enabled(if: TestEnvironment.runs(ifAvailable: ClickHouseTestService.isAvailable), ClickHouseTestService.skipReason))
struct ClickHouseSinkTests {
    @Test("end to end: typed columns, a replay answers the same and writes nothing, duplicates are counted")
    func endToEnd() throws {
        let database = try ClickHouseTestDatabase()
        let server = try IngestTestServer(config: database.serverConfig())
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let store = SegmentStoreID.random()
        let ids = (0..<3).map { _ in ObjectId.generate() }
        let body = try typedSensorSegment(store: store, ids: ids, fullDevice: "station\t2\\\n")
        let first = try server.upload(app: "shop", token: token, body: body)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.int("accepted") == 3)
        #expect(first.int("duplicate") == 0)
        let table = "\(database.name).WeatherSensor"
        #expect(try database.rows("SELECT count() FROM \(table) FINAL") == [["3"]])
        let row = try database.rows(
            """
            SELECT lower(hex(_id)), deviceId, toTypeName(temperature), temperature, active, takenAt, price, count,
                   visitParamExtractString(readings, 'note')
            FROM \(table) WHERE _id = unhex('\(ids[2].hex)') FORMAT TabSeparated
            """)
        // TabSeparated output escapes the tab, backslash and newline again.
        #expect(row == [[ids[2].hex, "station\\t2\\\\\\n", "Nullable(Float64)", "-3.25", "1", "1700000123456", "12.50", "7", "ok"]])
        #expect(try database.rows("SELECT lower(hex(_id)) FROM \(table) ORDER BY _id") == ids.map { [$0.hex] })

        let replay = try server.upload(app: "shop", token: token, body: body)
        #expect(replay.status == 200)
        #expect(replay.body == first.body)
        #expect(replay.header("DataIngest-Replayed") == "true")
        #expect(try database.rows("SELECT count() FROM \(table)") == [["3"]])

        let fresh = ObjectId.generate()
        let next = try makeSegment(
            store: store, number: 2, firstTransaction: 3,
            [
                [("WeatherSensor", sensor(ids[0])), ("WeatherSensor", sensor(fresh)), ("WeatherSensor", sensor(fresh))]
            ])
        let second = try server.upload(app: "shop", token: token, body: next)
        #expect(second.status == 200, "\(second.text)")
        #expect(second.int("accepted") == 1)
        #expect(second.int("duplicate") == 2)
        // Duplicates are not even inserted: the table holds each _id once before any merge.
        #expect(try database.rows("SELECT count(), uniqExact(_id) FROM \(table)") == [["4", "4"]])
    }

    @Test("two shards behind a Distributed table: concurrent uploads batched, replays, every object lands once")
    func twoShards() throws {
        let database = try ClickHouseTestDatabase()
        for shard in ["ingest_shard1", "ingest_shard2"] {
            _ = try database.client.execute("DROP TABLE IF EXISTS \(shard).WeatherSensor")
        }
        let server = try IngestTestServer(config: database.serverConfig(cluster: true))
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let stores = (0..<4).map { _ in SegmentStoreID.random() }
        // 4 clients × 5 segments × 25 objects, uploaded in parallel, each
        // segment twice (the second as a replay of a lost acknowledgement).
        let segments = try stores.map { store in
            try (1...5).map { number in
                try makeSegment(
                    store: store, number: UInt64(number), firstTransaction: UInt64(number),
                    [(0..<25).map { _ in ("WeatherSensor", sensor()) }])
            }
        }
        let failures = LockedBox<[String]>([])
        let port = server.port
        DispatchQueue.concurrentPerform(iterations: stores.count) { client in
            for segment in segments[client] + segments[client] {
                do {
                    let response = try IngestTestServer.call(
                        port: port, "POST", "/api/client/v2.0/app/shop/ingest",
                        headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/gzip"], body: segment)
                    if response.status != 200 { failures.withLock { $0.append("\(response.status) \(response.text)") } }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let shard1 = try database.rows("SELECT count() FROM ingest_shard1.WeatherSensor FINAL")
        let shard2 = try database.rows("SELECT count() FROM ingest_shard2.WeatherSensor FINAL")
        let counts = [shard1, shard2].compactMap { $0.first?.first.flatMap { Int($0) } }
        #expect(counts.count == 2 && counts.allSatisfy { $0 > 0 }, "both shards hold rows: \(counts)")
        #expect(counts.reduce(0, +) == 500)
        #expect(try database.rows("SELECT count(), uniqExact(_id) FROM \(database.name).WeatherSensor") == [["500", "500"]])
        // Every row is on the shard its _id hashes to, nowhere else.
        #expect(
            try database.rows(
                """
                SELECT count() FROM (SELECT _id FROM ingest_shard1.WeatherSensor) INNER JOIN
                       (SELECT _id FROM ingest_shard2.WeatherSensor) USING _id
                """) == [["0"]])
        for shard in ["ingest_shard1", "ingest_shard2"] {
            _ = try? database.client.execute("DROP TABLE IF EXISTS \(shard).WeatherSensor")
        }
    }

    @Test("a receipt lost after the insert: the retry reports duplicates and ClickHouse keeps each _id once")
    func lostReceipt() throws {
        let database = try ClickHouseTestDatabase()
        let directory = try TemporaryDirectory("e2e")
        let schema = try Schema([
            ObjectSchema(
                className: "Event", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "n", type: .int),
                    Property(name: "tags", type: .string, collection: .list),
                ])
        ])
        let objects = (0..<40).map { index in
            SinkObject(
                collection: "Event",
                document: [
                    "_id": .objectId(.generate()), "n": .int64(Int64(index)),
                    "tags": .array([.string("t\(index)")]),
                ])
        }
        let key = SegmentKey(storeId: .random(), segmentNumber: 1)
        let first = try ClickHouseSink(
            url: database.url, database: database.name,
            receipts: try SQLiteSink(path: directory.path + "/a.sqlite"))
        try first.migrate(to: schema)
        let written = try first.write(objects, receipt: key) { Array("\($0.filter { $0 }.count)".utf8) }
        #expect(String(decoding: written.response, as: UTF8.self) == "0")
        first.close()
        // Another server (or this one after losing its state) without the receipt.
        let second = try ClickHouseSink(
            url: database.url, database: database.name,
            receipts: try SQLiteSink(path: directory.path + "/b.sqlite"))
        defer { second.close() }
        try second.migrate(to: schema)
        #expect(try second.collectionCounts().map(\.count) == [40])
        let again = try second.write(objects, receipt: key) { Array("\($0.filter { $0 }.count)".utf8) }
        #expect(String(decoding: again.response, as: UTF8.self) == "40")
        // Racing writers of one new segment on the same sink: batched together, stored once.
        let fresh = (0..<30).map { _ in SinkObject(collection: "Event", document: ["_id": .objectId(.generate()), "n": .int32(1)]) }
        let errors = LockedBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            do {
                _ = try second.write(fresh, receipt: SegmentKey(storeId: .random(), segmentNumber: 2)) { _ in [] }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(errors.withLock { $0 }.isEmpty)
        let eventCounts = try database.rows("SELECT count(), uniqExact(_id) FROM \(database.name).Event")
        #expect(eventCounts == [["70", "70"]], "\(eventCounts)")
        #expect(try database.rows("SELECT n, tags FROM \(database.name).Event WHERE n = 39") == [["39", #"["t39"]"#]])

        // Integer and string primary keys are recognised as duplicates too.
        let keyed = try Schema([
            ObjectSchema(className: "ByInt", kind: .asymmetric, properties: [Property(name: "_id", type: .int, isPrimaryKey: true)]),
            ObjectSchema(className: "ByText", kind: .asymmetric, properties: [Property(name: "_id", type: .string, isPrimaryKey: true)]),
            ObjectSchema(className: "ByUUID", kind: .asymmetric, properties: [Property(name: "_id", type: .uuid, isPrimaryKey: true)]),
        ])
        try second.migrate(to: keyed)
        let keyedObjects = [
            SinkObject(collection: "ByInt", document: ["_id": .int64(-7)]),
            SinkObject(collection: "ByText", document: ["_id": .string("a\tb")]),
            SinkObject(collection: "ByUUID", document: ["_id": .binary(BSONBinary(subtype: 4, bytes: Array(0..<16)))]),
        ]
        for number in UInt64(10)...11 {
            let result = try second.write(keyedObjects, receipt: SegmentKey(storeId: .random(), segmentNumber: number)) {
                Array("\($0)".utf8)
            }
            #expect(String(decoding: result.response, as: UTF8.self) == (number == 10 ? "[false, false, false]" : "[true, true, true]"))
        }
        #expect(try database.rows("SELECT count() FROM \(database.name).ByInt") == [["1"]])
        // The UUID's bytes in RowBinary's order: the text reads back as the bytes were.
        #expect(try database.rows("SELECT toString(_id) FROM \(database.name).ByUUID") == [["00010203-0405-0607-0809-0a0b0c0d0e0f"]])
        #expect(try database.rows("SELECT _id FROM \(database.name).ByText") == [["a\\tb"]])
    }
}
