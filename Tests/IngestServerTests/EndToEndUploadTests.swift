#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestSupport
import IngestTestSupport

/// Uploads against a real `ingest-server` process on 127.0.0.1, with the
/// stored rows checked in the SQLite sink with SQL.
@Suite("End to end: uploads", .serialized)
struct EndToEndUploadTests {
    @Test("login, upload, rows in SQLite; a replay answers the same and writes nothing; duplicates are counted")
    func uploadReplayAndDuplicates() throws {
        let server = try IngestTestServer(config: uploadTestConfig)
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let store = SegmentStoreID.random()
        let ids = (0..<3).map { _ in ObjectId.generate() }
        let body = try typedSensorSegment(store: store, ids: ids, fullDevice: "station-2")

        let first = try server.upload(app: "shop", token: token, body: body)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.int("accepted") == 3)
        #expect(first.int("duplicate") == 0)
        #expect(first.int("rejected") == 0)
        #expect(first.int("transactions") == 2)
        #expect(first.int("segment_number") == 1)
        #expect(first.string("store_id") == store.uuidString)

        let sink = server.sinkPath("shop")
        #expect(try sqliteRows(sink, "SELECT count(*) FROM WeatherSensor") == [["3"]])
        // _id is the ObjectId's 12 bytes; scalars are typed columns; the list is Extended JSON.
        let row = try sqliteRows(
            sink,
            """
            SELECT _id, deviceId, typeof(temperature), temperature, active, takenAt, price, count,
                   json_extract(readings, '$[1].note')
            FROM WeatherSensor WHERE _id = x'\(ids[2].hex)'
            """)
        #expect(row == [["hex:\(ids[2].hex)", "station-2", "real", "-3.25", "1", "1700000123456", "12.50", "7", "ok"]])
        #expect(try sqliteRows(sink, "PRAGMA journal_mode") == [["wal"]])

        // The same segment again: the stored answer, nothing written.
        let replay = try server.upload(app: "shop", token: token, body: body)
        #expect(replay.status == 200)
        #expect(replay.body == first.body)
        #expect(replay.header("DataIngest-Replayed") == "true")
        #expect(try sqliteRows(sink, "SELECT count(*) FROM WeatherSensor") == [["3"]])
        #expect(try sqliteRows(sink, "SELECT count(*) FROM _dataingest_receipts") == [["1"]])

        // A later segment repeating an _id: a duplicate, not an error.
        let next = try makeSegment(
            store: store, number: 2, firstTransaction: 3,
            [
                [("WeatherSensor", sensor(ids[0])), ("WeatherSensor", sensor())]
            ])
        let second = try server.upload(app: "shop", token: token, body: next)
        #expect(second.status == 200, "\(second.text)")
        #expect(second.int("accepted") == 1)
        #expect(second.int("duplicate") == 1)
        #expect(try sqliteRows(sink, "SELECT count(*) FROM WeatherSensor") == [["4"]])

        // Metrics and the status page reflect the uploads.
        let metrics = try server.call("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains(#"ingest_objects_total{app="shop",outcome="accepted"} 4"#))
        #expect(metrics.text.contains(#"ingest_objects_total{app="shop",outcome="duplicate"} 1"#))
        #expect(metrics.text.contains(#"ingest_upload_replays_total{app="shop"} 1"#))
        #expect(metrics.text.contains(#"ingest_collection_rows{app="shop",collection="WeatherSensor"} 4"#))
        #expect(metrics.text.contains("ingest_sink_write_duration_seconds_count{app=\"shop\"} 2"))
        let status = try server.call("GET", "/")
        #expect(status.status == 200)
        #expect(status.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(status.text.contains(#"<td><code>WeatherSensor</code></td><td class="rows" data-rows="4""#))
        #expect(status.text.contains("<svg"))
        #expect(status.text.contains("<rect"))  // the ingest rate of the last seconds
        #expect(try server.call("GET", "/healthz").status == 200)
    }

    @Test("a rejected object rejects its whole transaction, with reasons; nothing of it is written")
    func transactionAtomicity() throws {
        let server = try IngestTestServer(config: uploadTestConfig)
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let good = [ObjectId.generate(), ObjectId.generate()]
        var wrong = sensor()
        wrong["temperature"] = .string("warm")
        let innocent = sensor()
        var unknownField = sensor()
        unknownField["humidity"] = .double(0.5)
        let body = try makeSegment(
            store: .random(), number: 9, firstTransaction: 40,
            [
                [("WeatherSensor", sensor(good[0])), ("WeatherSensor", sensor(good[1]))],  // records 0, 1
                [("WeatherSensor", innocent), ("WeatherSensor", wrong)],  // records 2, 3
                [("Invoice", ["_id": .objectId(.generate())])],  // record 4
                [("WeatherSensor", unknownField)],  // record 5
            ])
        let response = try server.upload(app: "shop", token: token, body: body)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.int("accepted") == 2)
        #expect(response.int("rejected") == 4)
        let rejected = try #require(response.json?["rejected_objects"] as? [[String: Any]])
        let byIndex = Dictionary(uniqueKeysWithValues: rejected.map { (($0["index"] as? NSNumber)?.intValue ?? -1, $0) })
        #expect(Set(byIndex.keys) == [2, 3, 4, 5])
        #expect(byIndex[3]?["error_code"] as? String == "wrongType")
        #expect((byIndex[3]?["reason"] as? String)?.contains("temperature") == true)
        #expect((byIndex[3]?["transaction"] as? NSNumber)?.intValue == 41)
        #expect(byIndex[2]?["error_code"] as? String == "transactionRejected")
        #expect(
            (byIndex[2]?["_id"] as? [String: Any])?["$oid"] as? String
                == innocent["_id"].flatMap {
                    if case .objectId(let id) = $0 { id.hex } else { nil }
                })
        #expect(byIndex[4]?["error_code"] as? String == "unknownClass")
        #expect(byIndex[4]?["collection"] as? String == "Invoice")
        #expect(byIndex[5]?["error_code"] as? String == "unknownField")

        let rows = try sqliteRows(server.sinkPath("shop"), "SELECT hex(_id) FROM WeatherSensor ORDER BY _id")
        #expect(rows == good.map { [$0.hex.uppercased()] })
        #expect(try sqliteRows(server.sinkPath("shop"), "SELECT name FROM sqlite_master WHERE name = 'Invoice'").isEmpty)
    }

    @Test("malformed gzip, gzip bombs, truncated and uncommitted segments are refused; the server stays healthy")
    func malformedBodies() throws {
        let server = try IngestTestServer(config: uploadTestConfig)
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        func expectError(_ body: [UInt8], _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let response = try server.upload(app: "shop", token: token, body: body)
            #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
            #expect(response.string("error_code") == code, "\(response.text)", sourceLocation: sourceLocation)
            #expect(response.string("error")?.isEmpty == false, sourceLocation: sourceLocation)
        }
        try expectError([], 400, "empty_body")
        try expectError(Array("definitely not gzip".utf8), 400, "malformed_gzip")
        // A segment whose records hold 8 MiB of zeros deflates ~1000:1: past the
        // ratio limit (50) and the size limit (4 MiB) long before its end.
        var bombFrames: [UInt8] = []
        SegmentFormat.appendStart(SegmentHeader(storeId: .random(), segmentNumber: 2, createdAtMillis: 0), to: &bombFrames)
        let zeros: BSONDocument = [
            "_id": .objectId(.generate()), "blob": .binary(BSONBinary(subtype: 0, bytes: [UInt8](repeating: 0, count: 1 << 20))),
        ]
        for _ in 0..<8 { try SegmentFormat.appendRecord(collection: "WeatherSensor", document: zeros.bsonBytes(), to: &bombFrames) }
        let bomb = try Gzip.compress(bombFrames, level: 9)
        #expect(bomb.count < 64 << 10)
        try expectError(bomb, 413, "inflate_limit_exceeded")
        try expectError(try Gzip.compress([UInt8](repeating: 0, count: 16 << 20), level: 9), 400, "malformed_segment")

        let valid = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        try expectError(Array(valid.prefix(valid.count - 12)), 400, "malformed_gzip")  // cut inside the gzip stream
        // A well-formed gzip of a stream whose last frames are cut off.
        let stream = try Gzip.decompress(valid, limits: .unlimited)
        try expectError(try Gzip.compress(Array(stream.dropLast(30))), 400, "malformed_segment")
        // Records after the last commit frame: not a complete transaction.
        var frames: [UInt8] = []
        SegmentFormat.appendStart(SegmentHeader(storeId: .random(), segmentNumber: 3, createdAtMillis: 0), to: &frames)
        try SegmentFormat.appendRecord(collection: "WeatherSensor", document: sensor().bsonBytes(), to: &frames)
        SegmentFormat.appendCommit(transactionNumber: 1, recordCount: 1, to: &frames)
        try SegmentFormat.appendRecord(collection: "WeatherSensor", document: sensor().bsonBytes(), to: &frames)
        SegmentFormat.appendEnd(recordCount: 2, transactionCount: 1, to: &frames)
        try expectError(try Gzip.compress(frames), 400, "malformed_segment")
        try expectError(try Gzip.compress(Array("DISEG\r\n\u{1A}garbage".utf8)), 400, "malformed_segment")

        #expect(try server.call("GET", "/healthz").status == 200)
        #expect(try sqliteRows(server.sinkPath("shop"), "SELECT count(*) FROM WeatherSensor") == [["0"]])
        // Still accepts good uploads afterwards.
        #expect(try server.upload(app: "shop", token: token, body: valid).int("accepted") == 1)
        let metrics = try server.call("GET", "/metrics").text
        #expect(metrics.contains(#"ingest_uploads_total{app="shop",status="413"} 1"#))
    }

    @Test("--sqlite-page-size sets the page size of the sink databases the server creates (default 16384)")
    func sinkPageSize() throws {
        for (arguments, expected) in [([String](), "16384"), (["--sqlite-page-size", "4096"], "4096")] {
            let server = try IngestTestServer(config: uploadTestConfig, extraArguments: arguments)
            defer { server.stop() }
            let token = try server.login(app: "shop").access
            let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
            #expect(try server.upload(app: "shop", token: token, body: body).int("accepted") == 1)
            #expect(try sqliteRows(server.sinkPath("shop"), "PRAGMA page_size") == [[expected]], "\(arguments)")
        }
    }

    @Test("a sink locked by another process answers 503 with Retry-After; the retry succeeds")
    func sinkBusy() throws {
        let server = try IngestTestServer(config: uploadTestConfig, extraArguments: ["--sink-busy-timeout", "50"])
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        let locker = try SQLiteLocker(path: server.sinkPath("shop"))
        let busy = try server.upload(app: "shop", token: token, body: body)
        #expect(busy.status == 503, "\(busy.text)")
        #expect(busy.string("error_code") == "sink_unavailable")
        #expect(busy.header("Retry-After") == "1")
        locker.release()
        let retried = try server.upload(app: "shop", token: token, body: body)
        #expect(retried.status == 200, "\(retried.text)")
        #expect(retried.int("accepted") == 1)
    }

    @Test("more concurrent uploads than allowed answer 429 with Retry-After")
    func tooManyUploads() throws {
        let server = try IngestTestServer(
            config: uploadTestConfig,
            extraArguments: ["--max-concurrent-uploads", "1", "--sink-busy-timeout", "5000"])
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let first = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        let second = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        // The first upload waits for the locked sink, holding the only upload slot.
        let locker = try SQLiteLocker(path: server.sinkPath("shop"))
        let status = LockedBox<Int?>(nil)
        let port = server.port
        let thread = Thread {
            let response = try? IngestTestServer.call(
                port: port, "POST", "/api/client/v2.0/app/shop/ingest",
                headers: ["Authorization": "Bearer \(token)"], body: first)
            status.withLock { $0 = response?.status ?? -1 }
        }
        thread.start()
        usleep(300_000)
        let refused = try server.upload(app: "shop", token: token, body: second)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.string("error_code") == "too_many_uploads")
        #expect(refused.header("Retry-After") == "1")
        locker.release()
        let deadline = monotonicNow() + 10
        while status.withLock({ $0 }) == nil && monotonicNow() < deadline { usleep(10_000) }
        #expect(status.withLock { $0 } == 200)
        #expect(try server.upload(app: "shop", token: token, body: second).status == 200)
    }

    @Test("tokens: missing, forged, expired, other app's; unknown app; refresh and logout")
    func tokens() throws {
        let server = try IngestTestServer(config: uploadTestConfig)
        defer { server.stop() }
        let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        func expect(_ response: LoopbackResponse, _ status: Int, _ code: String?, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
            if let code { #expect(response.string("error_code") == code, "\(response.text)", sourceLocation: sourceLocation) }
        }
        expect(try server.upload(app: "shop", token: nil, body: body), 401, "missing_token")
        expect(
            try server.call("POST", "/api/client/v2.0/app/shop/ingest", headers: ["Authorization": "Basic abc"], body: body),
            401, "missing_token")
        let forged = AccessTokenCodec(appId: "shop", secret: Array("another-secret-another-secret-another-secret".utf8))
            .issue(userId: "aaaaaaaaaaaaaaaaaaaaaaaa", deviceId: "bbbbbbbbbbbbbbbbbbbbbbbb", now: Int64(Date().timeIntervalSince1970))
        expect(try server.upload(app: "shop", token: forged, body: body), 401, "invalid_token")
        // Forged, naming another app or none that exists: still unsigned, 401 (not a permanent 403).
        for audience in ["other", "no-such-app"] {
            let forgedScope = AccessTokenCodec(appId: audience, secret: Array("another-secret-another-secret-another-secret".utf8))
                .issue(userId: "aaaaaaaaaaaaaaaaaaaaaaaa", deviceId: "bbbbbbbbbbbbbbbbbbbbbbbb", now: Int64(Date().timeIntervalSince1970))
            expect(try server.upload(app: "shop", token: forgedScope, body: body), 401, "invalid_token")
        }
        let expired = AccessTokenCodec(appId: "shop", secret: Array(IngestTestServer.shopSecret.utf8), lifetimeSeconds: 60)
            .issue(
                userId: "aaaaaaaaaaaaaaaaaaaaaaaa", deviceId: "bbbbbbbbbbbbbbbbbbbbbbbb",
                now: Int64(Date().timeIntervalSince1970) - 3600)
        expect(try server.upload(app: "shop", token: expired, body: body), 401, "expired_token")
        let otherToken = try server.login(app: "other").access
        expect(try server.upload(app: "shop", token: otherToken, body: body), 403, "wrong_app")
        expect(try server.upload(app: "nope", token: otherToken, body: body), 404, "unknown_app")
        expect(try server.call("GET", "/api/client/v2.0/app/shop/ingest"), 405, nil)
        expect(
            try server.call("POST", "/api/client/v2.0/app/shop/auth/providers/magic/login", body: Array("{}".utf8)),
            404, "unknown_provider")
        expect(
            try server.call(
                "POST", "/api/client/v2.0/app/other/auth/providers/local-userpass/login",
                body: Array(#"{"username":"a@b.cd","password":"12345678"}"#.utf8)), 403, "provider_disabled")
        expect(
            try server.call("POST", "/api/client/v2.0/app/shop/auth/providers/anon-user/login", body: Array("[".utf8)),
            400, "bad_request")
        #expect(try sqliteRows(server.sinkPath("shop"), "SELECT count(*) FROM WeatherSensor") == [["0"]])

        // Refresh gives a working access token; logout revokes the refresh token.
        let session = try server.login(app: "shop")
        let refreshed = try server.call("POST", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(session.refresh)"])
        expect(refreshed, 201, nil)
        let access = try #require(refreshed.string("access_token"))
        expect(try server.upload(app: "shop", token: access, body: body), 200, nil)
        expect(
            try server.call("DELETE", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(session.refresh)"]),
            204, nil)
        expect(
            try server.call("POST", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(session.refresh)"]),
            401, "invalid_token")
        expect(try server.call("POST", "/api/client/v2.0/auth/session"), 401, "invalid_token")
    }

    @Test("email/password registration and login; API key created by the subcommand logs in")
    func registrationAndAPIKeys() throws {
        let directory = try TemporaryDirectory("e2e")
        let configPath = directory.path + "/ingest.json"
        try Data(uploadTestConfig.replacingOccurrences(of: "$DATA", with: directory.path + "/data").utf8)
            .write(to: URL(fileURLWithPath: configPath))
        // The admin subcommand writes the key's hash into the state database before the server starts.
        let created = try runIngestServer(["apikey", "create", "--app", "shop", "--name", "till-1", "--config", configPath])
        #expect(created.status == 0, "\(created.output)")
        let key = try #require(created.output.split(separator: "\n").first.map(String.init))
        #expect(key.hasPrefix("dik_"))

        let server = try IngestTestServer(config: uploadTestConfig, directory: directory)
        defer { server.stop() }
        let register = "/api/client/v2.0/app/shop/auth/providers/local-userpass/register"
        let credentials = Array(#"{"email":"ada@example.com","password":"correct horse"}"#.utf8)
        let registered = try server.call("POST", register, body: credentials)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(registered.string("user_id")?.count == 24)
        #expect(try server.call("POST", register, body: credentials).status == 409)
        #expect(try server.call("POST", register, body: Array(#"{"email":"x@example.com","password":"short"}"#.utf8)).status == 400)
        let login = try server.call(
            "POST", "/api/client/v2.0/app/shop/auth/providers/local-userpass/login",
            body: Array(#"{"username":"ada@example.com","password":"correct horse"}"#.utf8))
        #expect(login.status == 200, "\(login.text)")
        #expect(login.string("user_id") == registered.string("user_id"))
        let bad = try server.call(
            "POST", "/api/client/v2.0/app/shop/auth/providers/local-userpass/login",
            body: Array(#"{"username":"ada@example.com","password":"wrong horse"}"#.utf8))
        #expect(bad.status == 401)
        let keyLogin = try server.call(
            "POST", "/api/client/v2.0/app/shop/auth/providers/api-key/login",
            body: Array(#"{"key":"\#(key)"}"#.utf8))
        #expect(keyLogin.status == 200, "\(keyLogin.text)")
        #expect(keyLogin.string("access_token") != nil)
    }
}
