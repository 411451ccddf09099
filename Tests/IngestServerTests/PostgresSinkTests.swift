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

/// The PostgreSQL sink against the real PostgreSQL that Scripts/test.sh
/// starts on 127.0.0.1. Serialized: one test restarts that PostgreSQL.
@Suite(
    "PostgreSQL sink", .serialized,
    .enabled(if: TestEnvironment.runs(ifAvailable: PostgresTestService.isAvailable), PostgresTestService.skipReason))
struct PostgresSinkTests {
    @Test("end to end: typed columns, a replay answers the same and writes nothing, duplicates are counted")
    func endToEnd() throws {
        let database = try PostgresTestDatabase()
        let server = try IngestTestServer(config: database.serverConfig)
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let store = SegmentStoreID.random()
        let ids = (0..<3).map { _ in ObjectId.generate() }
        let body = try typedSensorSegment(store: store, ids: ids, fullDevice: "station\t2\\\n")

        let first = try server.upload(app: "shop", token: token, body: body)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.int("accepted") == 3)
        #expect(first.int("duplicate") == 0)
        #expect(try database.rows("SELECT count(*) FROM \"WeatherSensor\"") == [["3"]])
        let row = try database.rows(
            """
            SELECT encode("_id", 'hex'), "deviceId", pg_typeof(temperature)::text, temperature::text, active::text,
                   (extract(epoch FROM "takenAt") * 1000)::bigint::text, price::text, pg_typeof(price)::text, count::text,
                   readings->1->>'note', pg_typeof(readings)::text
            FROM "WeatherSensor" WHERE "_id" = '\\x\(ids[2].hex)'
            """)
        #expect(
            row == [
                [
                    ids[2].hex, "station\t2\\\n", "double precision", "-3.25", "true", "1700000123456", "12.50", "numeric",
                    "7", "ok", "jsonb",
                ]
            ])
        // ObjectId bytes sort by creation time: the primary key keeps insertion order.
        #expect(
            try database.rows("SELECT encode(\"_id\", 'hex') FROM \"WeatherSensor\" ORDER BY \"_id\"")
                == ids.map { [$0.hex] })

        let replay = try server.upload(app: "shop", token: token, body: body)
        #expect(replay.status == 200)
        #expect(replay.body == first.body)
        #expect(replay.header("DataIngest-Replayed") == "true")
        #expect(try database.rows("SELECT count(*) FROM \"WeatherSensor\"") == [["3"]])
        #expect(try database.rows("SELECT count(*), min(object_count) FROM _dataingest_receipts") == [["1", "3"]])

        // A later segment repeating an _id twice and a stored one: duplicates, not errors.
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
        #expect(try database.rows("SELECT count(*) FROM \"WeatherSensor\"") == [["4"]])
        // What the sink holds, counted every few seconds.
        try expectRows(4, on: server)
    }

    @Test("PostgreSQL restarted mid-stream: 503 with Retry-After while it is down, then every object once")
    func restartMidStream() throws {
        let database = try PostgresTestDatabase()
        let server = try IngestTestServer(config: database.serverConfig)
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let store = SegmentStoreID.random()
        let segments = try (1...6).map { number in
            try makeSegment(
                store: store, number: UInt64(number), firstTransaction: UInt64(number),
                [(0..<20).map { _ in ("WeatherSensor", sensor()) }])
        }
        for segment in segments[0..<2] {
            #expect(try server.upload(app: "shop", token: token, body: segment).status == 200)
        }
        // Down: the pooled connection is dead and no new one can be opened.
        try PostgresTestService.control("stop")
        var restarted = false
        defer { if !restarted { try? PostgresTestService.control("start") } }
        let refused = try server.upload(app: "shop", token: token, body: segments[2])
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.header("Retry-After") == "1")
        #expect(refused.string("error_code") == "sink_unavailable")
        try PostgresTestService.control("start")
        restarted = true

        // The client retries every segment it has not seen acknowledged, and
        // replays one that was (its acknowledgement could have been lost).
        for segment in segments[2...] + [segments[1]] {
            var response = try server.upload(app: "shop", token: token, body: segment)
            var attempts = 1
            while response.status == 503 && attempts < 20 {
                usleep(250_000)
                response = try server.upload(app: "shop", token: token, body: segment)
                attempts += 1
            }
            #expect(response.status == 200, "\(response.text)")
        }
        #expect(try database.rows("SELECT count(*), count(DISTINCT \"_id\") FROM \"WeatherSensor\"") == [["120", "120"]])
        #expect(try database.rows("SELECT count(*) FROM _dataingest_receipts") == [["6"]])
    }

    @Test("sink API: racing writes of one segment store it once; migration is additive; every column type")
    func sinkRacesAndMigration() throws {
        let database = try PostgresTestDatabase()
        let sink = try PostgresSink(connection: database.url)
        defer { sink.close() }
        let v1 = try Schema([
            ObjectSchema(
                className: "Event", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "name", type: .string),
                ])
        ])
        try sink.migrate(to: v1)
        let ids = (0..<50).map { _ in ObjectId.generate() }
        let objects = ids.map { SinkObject(collection: "Event", document: ["_id": .objectId($0), "name": .string("e")]) }
        let key = SegmentKey(storeId: .random(), segmentNumber: 7)
        let results = LockedBox<[SinkWriteResult]>([])
        let errors = LockedBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let result = try sink.write(objects, receipt: key) { duplicates in
                    Array("{\"duplicates\":\(duplicates.filter { $0 }.count)}".utf8)
                }
                results.withLock { $0.append(result) }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
        let all = results.withLock { $0 }
        #expect(all.count == 4)
        #expect(all.filter { if case .written = $0 { true } else { false } }.count == 1)
        #expect(Set(all.map { String(decoding: $0.response, as: UTF8.self) }) == [#"{"duplicates":0}"#])
        #expect(try sink.receipt(for: key).map { String(decoding: $0, as: UTF8.self) } == #"{"duplicates":0}"#)
        #expect(try sink.receipt(for: SegmentKey(storeId: .random(), segmentNumber: 7)) == nil)
        #expect(try database.rows("SELECT count(*) FROM \"Event\"") == [["50"]])

        // v2 adds a column of every type; old rows keep NULL there.
        let v2 = try Schema([
            ObjectSchema(
                className: "Event", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "name", type: .string),
                    Property(name: "flag", type: .bool, isOptional: true),
                    Property(name: "n", type: .int, isOptional: true),
                    Property(name: "f", type: .float, isOptional: true),
                    Property(name: "d", type: .double, isOptional: true),
                    Property(name: "blob", type: .data, isOptional: true),
                    Property(name: "at", type: .date, isOptional: true),
                    Property(name: "amount", type: .decimal128, isOptional: true),
                    Property(name: "ref", type: .objectId, isOptional: true),
                    Property(name: "u", type: .uuid, isOptional: true),
                    Property(name: "any", type: .mixed, isOptional: true),
                    Property(name: "tags", type: .string, collection: .list),
                    Property(name: "attrs", type: .int, collection: .map),
                ])
        ])
        try sink.migrate(to: v2)
        let id = ObjectId.generate()
        let uuid: [UInt8] = [0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00]
        let document: BSONDocument = [
            "_id": .objectId(id), "name": .string("ünïcode ☃"), "flag": .bool(false), "n": .int64(-9_000_000_000),
            "f": .double(1.5), "d": .double(.infinity), "blob": .binary(BSONBinary(subtype: 0, bytes: [0, 1, 0xFF])),
            "at": .datetime(-1), "amount": .decimal128(try Decimal128(parsing: "-1.05E+3")), "ref": .objectId(id),
            "u": .binary(BSONBinary(subtype: 4, bytes: uuid)), "any": .string("x"),
            "tags": .array([.string("a"), .string("b\"c")]), "attrs": .document(["k": .int32(1)]),
        ]
        let written = try sink.write(
            [SinkObject(collection: "Event", document: document)],
            receipt: SegmentKey(storeId: .random(), segmentNumber: 1)
        ) { _ in [] }
        guard case .written(let duplicates, _) = written else { Issue.record("not written"); return }
        #expect(duplicates == [false])
        let row = try database.rows(
            """
            SELECT name, flag::text, n::text, f::text, d::text, encode(blob, 'hex'), "at"::text, amount::text,
                   encode(ref, 'hex'), u::text, "any"::text, tags->>1, attrs->>'k'
            FROM "Event" WHERE "_id" = '\\x\(id.hex)'
            """)
        #expect(
            row == [
                [
                    "ünïcode ☃", "false", "-9000000000", "1.5", "Infinity", "0001ff", "1969-12-31 23:59:59.999+00",
                    "-1050", id.hex, "123e4567-e89b-12d3-a456-426614174000", "\"x\"", "b\"c", "1",
                ]
            ])
        #expect(try database.rows("SELECT count(*) FROM \"Event\" WHERE flag IS NULL") == [["50"]])
        #expect(try sink.collectionCounts().map(\.count) == [51])

        // A value PostgreSQL cannot hold fails the write before anything is stored.
        #expect(throws: SinkError.self) {
            try sink.write(
                [SinkObject(collection: "Event", document: ["_id": .objectId(.generate()), "name": .string("a\u{0}b")])],
                receipt: SegmentKey(storeId: .random(), segmentNumber: 2)
            ) { _ in [] }
        }
        #expect(try database.rows("SELECT count(*) FROM _dataingest_receipts") == [["2"]])
    }

    @Test("an unreachable PostgreSQL at start-up fails with the reason; the password is not shown")
    func unreachable() throws {
        var failure: SinkError?
        do {
            _ = try PostgresSink(connection: "postgresql://ingest:secret-pw@127.0.0.1:1/none?connect_timeout=2")
        } catch {
            failure = error
        }
        #expect(failure?.code == .open)
        #expect(failure?.description.contains("secret-pw") == false)
        #expect(failure?.description.contains("127.0.0.1") == true)
    }

    @Test("two ingest servers sharing PostgreSQL state: tokens work across them, a replay on the other is recognised")
    func twoServersSharedState() throws {
        let database = try PostgresTestDatabase()
        let config = database.serverConfig.replacingOccurrences(
            of: #""stateDirectory": "$DATA","#,
            with: #""stateDirectory": "$DATA", "sharedState": { "kind": "postgres", "connection": "\#(database.url)" },"#)
        let a = try IngestTestServer(config: config)
        defer { a.stop() }
        let b = try IngestTestServer(config: config)
        defer { b.stop() }

        // Email/password registered on A logs in on B.
        let credentials = Array(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8)
        let registered = try a.call("POST", "/api/client/v2.0/app/shop/auth/providers/local-userpass/register", body: credentials)
        #expect(registered.status / 100 == 2, "\(registered.text)")
        let login = try b.call("POST", "/api/client/v2.0/app/shop/auth/providers/local-userpass/login", body: credentials)
        #expect(login.status == 200, "\(login.text)")

        // A refresh token issued by A refreshes on B; logged out on B, it is refused by A.
        let session = try a.login(app: "shop")
        let refreshed = try b.call("POST", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(session.refresh)"])
        #expect(refreshed.status == 201, "\(refreshed.text)")
        let loggedOut = try b.call("DELETE", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(session.refresh)"])
        #expect(loggedOut.status == 204, "\(loggedOut.text)")
        let refused = try a.call("POST", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(session.refresh)"])
        #expect(refused.status == 401, "\(refused.text)")

        // A segment stored through A and retried against B: B answers from the shared receipt.
        let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor()), ("WeatherSensor", sensor())]])
        let first = try a.upload(app: "shop", token: session.access, body: body)
        #expect(first.status == 200, "\(first.text)")
        let retried = try b.upload(app: "shop", token: session.access, body: body)
        #expect(retried.status == 200)
        #expect(retried.header("DataIngest-Replayed") == "true")
        #expect(retried.body == first.body)
        #expect(try database.rows("SELECT count(*) FROM \"WeatherSensor\"") == [["2"]])
        #expect(try database.rows("SELECT count(*) FROM users WHERE provider = 'local-userpass'") == [["1"]])
    }
}
