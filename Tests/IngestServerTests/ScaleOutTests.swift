#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import IngestCore
import Testing
import IngestTestSupport
@testable import IngestServer
import IngestSupport

/// Several ingest servers on one shared state (issue 22): started together
/// on fresh databases, learning a development schema at once, reporting
/// what the sink holds, ClickHouse receipts with their counts.
/// Serialized: the suites share the test PostgreSQL and ClickHouse.
@Suite(
    "Scale-out: several servers, shared state", .serialized,
    .enabled(if: TestEnvironment.runs(ifAvailable: PostgresTestService.isAvailable), PostgresTestService.skipReason))
struct ScaleOutTests {
    @Test("servers started at the same moment on fresh databases all come up (PostgreSQL sink, repeated)")
    func simultaneousStartPostgres() throws {
        let started = monotonicNow()
        var rounds = 0
        // 2, 3 and 4 servers, twice each, within about 30 s.
        for count in [2, 3, 4, 2, 3, 4] where monotonicNow() - started < 30 {
            let sink = try PostgresTestDatabase()
            let state = try PostgresTestDatabase()
            let config = sink.serverConfig.sharingState(state.url)
            let servers = try startTogether(count, config: config)
            try checkServing(servers)
            servers.forEach { $0.stop() }
            rounds += 1
        }
        #expect(rounds >= 3)
    }

    @Test(
        "servers started at the same moment on fresh databases all come up (ClickHouse sink and cluster, repeated)",
        .enabled(if: TestEnvironment.runs(ifAvailable: ClickHouseTestService.isAvailable), ClickHouseTestService.skipReason))
    func simultaneousStartClickHouse() throws {
        let started = monotonicNow()
        var rounds = 0
        for (count, cluster) in [(2, false), (3, true), (4, false), (2, true)] where monotonicNow() - started < 30 {
            let sink = try ClickHouseTestDatabase()
            let state = try PostgresTestDatabase()
            if cluster {
                for shard in ["ingest_shard1", "ingest_shard2"] {
                    _ = try sink.client.execute("DROP TABLE IF EXISTS \(shard).WeatherSensor")
                }
            } else {
                // A table from an older schema: every server adds the same columns at once.
                _ = try sink.client.execute("CREATE DATABASE \(sink.name)")
                _ = try sink.client.execute(
                    "CREATE TABLE \(sink.name).WeatherSensor (_id FixedString(12), "
                        + "_ingested_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY _id")
            }
            let servers = try startTogether(count, config: sink.serverConfig(cluster: cluster).sharingState(state.url))
            try checkServing(servers)
            if cluster {
                // The banner names the cluster.
                let banner = try String(contentsOfFile: servers[0].directory.path + "/stderr.log", encoding: .utf8)
                #expect(
                    banner.contains("app shop: sink clickhouse:\(sink.url)/\(sink.name) (cluster ingest_two_shards, 2 shards)"),
                    "\(banner)")
            }
            servers.forEach { $0.stop() }
            rounds += 1
        }
        #expect(rounds >= 2)
    }

    @Test("development mode on shared state: two instances learning the same collections at once agree; a restart keeps it")
    func developmentSchemaShared() throws {
        let sink = try PostgresTestDatabase()
        let state = try PostgresTestDatabase()
        let config = developmentConfig(sink: #"{ "kind": "postgres", "connection": "\#(sink.url)" }"#, state: state.url)
        var servers = try startTogether(2, config: config)
        let tokens = try servers.map { try $0.login(app: "lab").access }
        let ports = servers.map(\.port)
        // Each round both instances receive, at the same moment, the first
        // object of a new collection; `value` is a double on A and a string on B.
        let rounds = 3
        for round in 0..<rounds {
            let collection = "Probe\(round)"
            let bodies = try [
                makeSegment(
                    store: .random(), number: 1,
                    [
                        [
                            (
                                collection,
                                [
                                    "_id": .objectId(.generate()), "value": .double(1.5),
                                    "onlyA": .string("a"),
                                ]
                            )
                        ]
                    ]),
                makeSegment(
                    store: .random(), number: 1,
                    [
                        [
                            (
                                collection,
                                [
                                    "_id": .objectId(.generate()), "value": .string("text"),
                                    "onlyB": .int32(7),
                                ]
                            )
                        ]
                    ]),
            ]
            let answers = try together(2) { index in
                try IngestTestServer.call(
                    port: ports[index], "POST", "/api/client/v2.0/app/lab/ingest",
                    headers: ["Authorization": "Bearer \(tokens[index])"], body: bodies[index])
            }
            for answer in answers { #expect(answer.status == 200, "\(answer.text)") }
            // One learned `value` first; the other's object has the wrong type for it.
            let accepted = answers.map { $0.int("accepted") ?? -1 }
            #expect(accepted.sorted() == [0, 1], "\(answers.map(\.text))")
            let loser = accepted.firstIndex(of: 0) ?? 0
            let reasons = answers[loser].json?["rejected_objects"] as? [[String: Any]]
            #expect(reasons?.first?["error_code"] as? String == "wrongType", "\(answers[loser].text)")
            let column = try sink.rows(
                """
                SELECT data_type FROM information_schema.columns WHERE table_name = '\(collection)' AND column_name = 'value'
                """)
            #expect(column == [[loser == 0 ? "text" : "double precision"]])
            // Both new fields are known to both instances.
            #expect(
                try sink.rows(
                    """
                    SELECT count(*) FROM information_schema.columns WHERE table_name = '\(collection)' AND column_name IN ('onlyA', 'onlyB')
                    """) == [["2"]])
        }
        #expect(try state.rows("SELECT count(*) FROM development_schemas WHERE app_id = 'lab'") == [["1"]])

        // Restart both with empty data directories: the schema comes from the shared state.
        let winners = try (0..<rounds).map { round in
            try sink.rows("SELECT data_type FROM information_schema.columns WHERE table_name = 'Probe\(round)' AND column_name = 'value'")
                .first?.first ?? ""
        }
        servers.forEach { $0.stop() }
        servers = try startTogether(2, config: config)
        for server in servers {
            let metrics = try server.call("GET", "/metrics").text
            for round in 0..<rounds {
                #expect(metrics.contains(#"ingest_collection_rows{app="lab",collection="Probe\#(round)"} 1"#), "\(metrics)")
            }
            let page = try server.call("GET", "/").text
            #expect(page.contains("Probe2"))
            let token = try server.login(app: "lab").access
            for round in 0..<rounds {
                let wrong: BSON = winners[round] == "text" ? .double(2.5) : .string("again")
                let right: BSON = winners[round] == "text" ? .string("ok") : .double(2.5)
                let answer = try server.upload(
                    app: "lab", token: token,
                    body: makeSegment(
                        store: .random(), number: 1,
                        [
                            [
                                (
                                    "Probe\(round)",
                                    ["_id": .objectId(.generate()), "value": right, "onlyA": .string("x"), "onlyB": .int32(1)]
                                )
                            ],
                            [("Probe\(round)", ["_id": .objectId(.generate()), "value": wrong])],
                        ]))
                #expect(answer.int("accepted") == 1, "\(answer.text)")
                #expect((answer.json?["rejected_objects"] as? [[String: Any]])?.first?["error_code"] as? String == "wrongType")
            }
        }
        servers.forEach { $0.stop() }
    }

    @Test("ingest_collection_rows and the status page report what the PostgreSQL sink holds, written through another instance")
    func gaugesMatchPostgresSink() throws {
        let sink = try PostgresTestDatabase()
        let servers = try startTogether(2, config: sink.serverConfig.sharingState(sink.url))
        let token = try servers[0].login(app: "shop").access
        try uploadSensors(through: servers[0], token: token, segments: 3, objects: 10)
        #expect(try sink.rows(#"SELECT count(*) FROM "WeatherSensor""#) == [["30"]])
        try expectRows(30, on: servers[1])
        // Rows written by anyone else count too: the gauge is the sink's, not the instance's.
        #expect(
            try sink.rows(
                #"WITH added AS (INSERT INTO "WeatherSensor" ("_id", "deviceId", temperature, readings) "#
                    + #"SELECT decode(lpad(to_hex(n), 24, '0'), 'hex'), 'x', 1, '[]' FROM generate_series(1, 5) AS n "#
                    + "RETURNING 1) SELECT count(*) FROM added") == [["5"]])
        try expectRows(35, on: servers[0])
        try expectRows(35, on: servers[1])

        // A large table is not counted row by row: above 100 000 rows the
        // gauge is PostgreSQL's estimate, and says so.
        #expect(
            try sink.rows(
                #"WITH added AS (INSERT INTO "WeatherSensor" ("_id", "deviceId", temperature, readings) "#
                    + #"SELECT decode(lpad(to_hex(n), 24, '0'), 'hex'), 'x', 1, '[]' FROM generate_series(100, 120099) AS n "#
                    + "RETURNING 1) SELECT count(*) FROM added") == [["120000"]])
        try analyze(sink)
        let estimated = #"ingest_collection_rows_estimated{app="shop",collection="WeatherSensor"} 1"#
        let deadline = monotonicNow() + 20
        var metrics = ""
        while monotonicNow() < deadline {
            metrics = try servers[1].call("GET", "/metrics").text
            if metrics.contains(estimated + "\n") { break }
            usleep(200_000)
        }
        #expect(metrics.contains(estimated + "\n"))
        let rows =
            metrics.split(separator: "\n").first { $0.hasPrefix(#"ingest_collection_rows{app="shop",collection="WeatherSensor"}"#) }
            .flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
        #expect(abs(rows - 120_035) < 12_000, "estimate \(rows)")
        #expect(try servers[1].call("GET", "/").text.contains(#"data-estimate="true""#))
        servers.forEach { $0.stop() }
    }

    @Test("PostgreSQL row counts: exact below the limit, the statistics' estimate above, marked; a column of another type is refused")
    func postgresCountsAndColumnTypes() throws {
        let database = try PostgresTestDatabase()
        var configuration = PostgresSink.Configuration()
        configuration.exactCountLimit = 100
        let sink = try PostgresSink(connection: database.url, configuration: configuration)
        defer { sink.close() }
        let schema = try Schema(
            ["Big", "Small"].map { name in
                ObjectSchema(
                    className: name, kind: .asymmetric,
                    properties: [
                        Property(name: "_id", type: .objectId, isPrimaryKey: true), Property(name: "n", type: .int),
                    ])
            })
        try sink.migrate(to: schema)
        #expect(
            try sink.collectionCounts() == [
                CollectionRowCount(collection: "Big", count: 0), CollectionRowCount(collection: "Small", count: 0),
            ])
        for number in UInt64(1)...3 {
            let objects = (0..<100).map {
                SinkObject(collection: "Big", document: ["_id": .objectId(.generate()), "n": .int64(Int64($0))])
            }
            _ = try sink.write(objects, receipt: SegmentKey(storeId: .random(), segmentNumber: number)) { _ in [] }
        }
        _ = try sink.write(
            [SinkObject(collection: "Small", document: ["_id": .objectId(.generate()), "n": .int32(1)])],
            receipt: SegmentKey(storeId: .random(), segmentNumber: 9)
        ) { _ in [] }
        try analyze(database)
        let counts = try sink.collectionCounts()
        #expect(counts.map(\.collection) == ["Big", "Small"])
        #expect(counts.first?.isEstimate == true && counts.first?.count == 300, "\(counts)")
        #expect(counts.last == CollectionRowCount(collection: "Small", count: 1, isEstimate: false))

        // A column that exists with another type (left by a schema change, or a
        // server that crashed while learning) is refused, not written into.
        let changed = try Schema([
            ObjectSchema(
                className: "Small", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true), Property(name: "n", type: .string),
                ])
        ])
        #expect {
            try sink.migrate(to: changed)
        } throws: { error in
            (error as? SinkError)?.code == .migration && "\(error)".contains("column n of table Small has type bigint")
        }
    }

    @Test(
        "ingest_collection_rows reports what the ClickHouse sink holds, written through another instance",
        .enabled(if: TestEnvironment.runs(ifAvailable: ClickHouseTestService.isAvailable), ClickHouseTestService.skipReason))
    func gaugesMatchClickHouseSink() throws {
        let sink = try ClickHouseTestDatabase()
        let state = try PostgresTestDatabase()
        let servers = try startTogether(2, config: sink.serverConfig().sharingState(state.url))
        let token = try servers[0].login(app: "shop").access
        try uploadSensors(through: servers[0], token: token, segments: 3, objects: 10)
        try expectRows(30, on: servers[1])
        servers.forEach { $0.stop() }
    }

    @Test(
        "ClickHouse receipts keep their object count, in the shared state and in the local receipts file",
        .enabled(if: TestEnvironment.runs(ifAvailable: ClickHouseTestService.isAvailable), ClickHouseTestService.skipReason))
    func clickHouseReceiptCounts() throws {
        let sink = try ClickHouseTestDatabase()
        let state = try PostgresTestDatabase()
        let shared = try IngestTestServer(config: sink.serverConfig().sharingState(state.url))
        defer { shared.stop() }
        let body = try makeSegment(
            store: .random(), number: 1,
            [
                [("WeatherSensor", sensor()), ("WeatherSensor", sensor())], [("WeatherSensor", sensor())],
            ])
        let first = try shared.upload(app: "shop", token: try shared.login(app: "shop").access, body: body)
        #expect(first.int("accepted") == 3, "\(first.text)")
        #expect(try state.rows("SELECT count(*), sum(object_count) FROM _dataingest_receipts") == [["1", "3"]])

        let local = try IngestTestServer(config: sink.serverConfig())
        defer { local.stop() }
        let second = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor()), ("WeatherSensor", sensor())]])
        #expect(try local.upload(app: "shop", token: try local.login(app: "shop").access, body: second).int("accepted") == 2)
        #expect(
            try sqliteRows(
                local.dataPath + "/shop.clickhouse-receipts.sqlite",
                "SELECT count(*), sum(object_count) FROM _dataingest_receipts") == [["1", "2"]])
    }

    // MARK: - Helpers

    /// Starts `count` servers with `config` at the same moment (one thread
    /// each, released together), each with its own data directory.
    func startTogether(_ count: Int, config: String) throws -> [IngestTestServer] {
        let results = try together(count) { _ in try IngestTestServer(config: config) }
        return results
    }

    /// Every server answers /healthz, a login on one and an upload through another work.
    func checkServing(_ servers: [IngestTestServer]) throws {
        for server in servers { #expect(try server.call("GET", "/healthz").status == 200) }
        let token = try servers[0].login(app: "shop").access
        let answer = try servers[servers.count - 1].upload(
            app: "shop", token: token, body: makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]]))
        #expect(answer.status == 200, "\(answer.text)")
        for server in servers { #expect(server.server.isRunning) }
    }

    func uploadSensors(through server: IngestTestServer, token: String, segments: Int, objects: Int) throws {
        let store = SegmentStoreID.random()
        for number in 1...segments {
            let body = try makeSegment(
                store: store, number: UInt64(number), firstTransaction: UInt64(number),
                [(0..<objects).map { _ in ("WeatherSensor", sensor()) }])
            let answer = try server.upload(app: "shop", token: token, body: body)
            #expect(answer.status == 200, "\(answer.text)")
        }
    }

    /// Runs ANALYZE on `database` (what autovacuum does by itself after enough writes).
    func analyze(_ database: PostgresTestDatabase) throws {
        let connection = try PostgresConnection(database.url)
        defer { connection.close() }
        try connection.execute("ANALYZE")
    }

    /// A development-mode app `lab` on `sink`, sharing state in `state`.
    func developmentConfig(sink: String, state: String) -> String {
        """
        {
          "stateDirectory": "$DATA",
          "sharedState": { "kind": "postgres", "connection": "\(state)" },
          "apps": [ { "id": "lab", "developmentMode": true, "auth": { "anon-user": {} }, "sink": \(sink) } ]
        }
        """
    }
}

/// Waits (at most 20 s) until the server's gauge and status page show
/// `rows` rows of WeatherSensor in app shop.
func expectRows(_ rows: Int, on server: IngestTestServer) throws {
    let line = #"ingest_collection_rows{app="shop",collection="WeatherSensor"} \#(rows)"#
    let deadline = monotonicNow() + 20
    var metrics = ""
    while monotonicNow() < deadline {
        metrics = try server.call("GET", "/metrics").text
        if metrics.contains(line + "\n") { break }
        usleep(200_000)
    }
    #expect(metrics.contains(line + "\n"), "\(metrics.split(separator: "\n").filter { $0.contains("collection_rows") })")
    let page = try server.call("GET", "/").text
    #expect(page.contains(#"<td class="rows" data-rows="\#(rows)""#), "status page rows")
}

/// Runs `body(0..<count)` on `count` threads released at the same moment;
/// returns the results in order, or throws the first error (after all ended).
func together<T>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) throws -> [T] {
    let results = LockedBox<[Result<T, any Error>?]>(Array(repeating: nil, count: count))
    let gate = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            gate.wait()
            let result = Result { try body(index) }
            results.withLock { $0[index] = result }
            finished.signal()
        }
        thread.start()
    }
    for _ in 0..<count { gate.signal() }
    for _ in 0..<count {
        guard finished.wait(timeout: .now() + 60) == .success else { throw TestSupportError("a thread did not finish in 60 s") }
    }
    return try results.withLock { $0 }.map { try $0!.get() }
}

extension String {
    /// This server configuration with `sharedState` in the PostgreSQL database at `url`.
    func sharingState(_ url: String) -> String {
        replacingOccurrences(
            of: #""stateDirectory": "$DATA","#,
            with: #""stateDirectory": "$DATA", "sharedState": { "kind": "postgres", "connection": "\#(url)" },"#)
    }
}
