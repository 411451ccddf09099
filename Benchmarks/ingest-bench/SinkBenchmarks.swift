#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestServer
import IngestSupport

// The production sinks (issue 8): objects/s through a real `ingest-server`
// process (release build next to this binary, a configuration file with one
// app whose sink is PostgreSQL or ClickHouse) receiving prepared sealed
// segments from several keep-alive clients, next to loading the same rows
// straight into the same database in the same run:
//
// - PostgreSQL: a bare `COPY … FROM STDIN` (text format, rows encoded before
//   the clock starts) into a table of the sink's shape (`_id bytea` primary
//   key, `_ingested_at timestamptz DEFAULT now()`, typed columns), 1,000
//   rows per COPY (one per segment, each its own transaction), one connection;
// - ClickHouse: a bare `INSERT … FORMAT JSONEachRow` over HTTP of 1,000 rows
//   per insert (one per segment) into a `ReplacingMergeTree` table of the
//   sink's shape, one keep-alive connection.
//
// The target (issue 19) is at least 1.0× these baselines for both sinks.
//
// Like is compared with like: the server's path and the 1,000-row baseline
// take turns, in rounds of the same segments (INGEST_BENCH_SINK_ROUNDS,
// default 10), the baseline first in every other round, each into its own
// table, so that both write into tables of the same size at the same
// moment, with the same background merges (ClickHouse) or checkpoints
// (PostgreSQL) running; each rate is its rows over the sum of its rounds'
// times. (Run one after the other, the second path met tables and a
// database busier than the first had, and ClickHouse's 1,000-row baseline
// fell from 320k to 53k objects/s over three runs.)
//
// Two informative baselines (no target): the same batches from as many
// connections in parallel as the server has clients, and every row in one
// statement (the fastest load the database offers).
//
// The databases come from the environment; a sink whose URL is unset is
// skipped with a message on standard error:
//
//   INGEST_BENCH_POSTGRES_URL   (or INGEST_TEST_POSTGRES_URL)   libpq URI of a server
//                               where the benchmark may create and drop a database
//   INGEST_BENCH_CLICKHOUSE_URL (or INGEST_TEST_CLICKHOUSE_URL) http://host:port
//
// With the PID of a database running on this machine (the postmaster's for
// PostgreSQL, whose backends are its children), the group also reports the
// CPU time per object that database spent in each path, and that of every
// process of each path together (database, ingest-server, this benchmark):
// on a machine whose cores they share, a path that costs more CPU in all
// cannot be faster once the cores are busy.
//
//   INGEST_BENCH_POSTGRES_PID   (or INGEST_TEST_POSTGRES_PID)
//   INGEST_BENCH_CLICKHOUSE_PID (or INGEST_TEST_CLICKHOUSE_PID)
//
// Throwaway local servers: Scripts/services/postgres.sh and clickhouse.sh
// (see README.md, "Benchmarks"). Sizes: INGEST_BENCH_SINK_SEGMENTS (default
// 200 segments of 1,000 objects), INGEST_BENCH_SINK_CLIENTS (default 4).

func sinkBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let segmentCount = max(1, Int(environment["INGEST_BENCH_SINK_SEGMENTS"] ?? "") ?? 200)
    let clients = max(1, Int(environment["INGEST_BENCH_SINK_CLIENTS"] ?? "") ?? 4)
    let rounds = min(segmentCount, max(1, Int(environment["INGEST_BENCH_SINK_ROUNDS"] ?? "") ?? 10))
    let postgresURL = environment["INGEST_BENCH_POSTGRES_URL"] ?? environment["INGEST_TEST_POSTGRES_URL"]
    let clickHouseURL = environment["INGEST_BENCH_CLICKHOUSE_URL"] ?? environment["INGEST_TEST_CLICKHOUSE_URL"]
    func pid(_ variable: String, of database: String) -> Int32? {
        databasePID(variable, in: environment) { text in
            sinkBenchNote("skipped \(database)'s CPU figures: the PID \(text) is not a process on this machine")
        }
    }
    if postgresURL == nil {
        sinkBenchNote(
            "skipped the PostgreSQL figures: INGEST_BENCH_POSTGRES_URL (or INGEST_TEST_POSTGRES_URL) is not set; "
                + "start one with `Scripts/services/postgres.sh start DIR` and `source DIR/postgres.env`")
    }
    if clickHouseURL == nil {
        sinkBenchNote(
            "skipped the ClickHouse figures: INGEST_BENCH_CLICKHOUSE_URL (or INGEST_TEST_CLICKHOUSE_URL) is not set; "
                + "start one with `Scripts/services/clickhouse.sh start DIR` and `source DIR/clickhouse.env`")
    }
    guard postgresURL != nil || clickHouseURL != nil else { return [] }

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-sinks-\(getpid())").path
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    // Prepared before anything is timed: sealed segments and the same objects as values.
    let segments = try ServerBenchSegments(sensor: WeatherSensorBSON(), segments: segmentCount, perSegment: 1_000)
    var figures: [Figure] = []
    if let postgresURL {
        figures += try postgresSinkFigures(
            url: postgresURL, pid: pid("POSTGRES_PID", of: "PostgreSQL"), segments: segments, clients: clients, rounds: rounds,
            directory: directory + "/postgres")
    }
    if let clickHouseURL {
        figures += try clickHouseSinkFigures(
            url: clickHouseURL, pid: pid("CLICKHOUSE_PID", of: "ClickHouse"), segments: segments, clients: clients, rounds: rounds,
            directory: directory + "/clickhouse")
    }
    return figures
}

private func sinkBenchNote(_ text: String) {
    FileHandle.standardError.write(Data("ingest-bench: sinks: \(text)\n".utf8))
}

/// The server configuration: one app `bench` (anonymous login) with the
/// seed's WeatherSensor as an asymmetric class and the given sink.
private func sinkBenchConfig(directory: String, sink: String) throws -> (path: String, appId: String) {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let text = """
        {
          "stateDirectory": "\(directory)/server",
          "apps": [
            {
              "id": "bench",
              "auth": { "anon-user": {} },
              "sink": \(sink),
              "schema": {
                "WeatherSensor": {
                  "kind": "asymmetric",
                  "properties": {
                    "_id": "objectId", "deviceId": "string", "temperatureInFahrenheit": "double",
                    "barometricPressureInHg": "double", "windSpeedInMph": "int"
                  }
                }
              }
            }
          ]
        }
        """
    let path = directory + "/ingest.json"
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return (path, "bench")
}

// MARK: - PostgreSQL

private func postgresSinkFigures(
    url: String, pid: Int32?, segments: ServerBenchSegments, clients: Int, rounds: Int, directory: String
) throws -> [Figure] {
    let database = "ingest_bench_\(getpid())"
    let admin = try PostgresConnection(url)
    defer { admin.close() }
    try admin.execute("DROP DATABASE IF EXISTS \(database)")
    try admin.execute("CREATE DATABASE \(database)")
    defer { _ = try? admin.execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
    let databaseURL = replacingDatabase(in: url, with: database)
    let count = segments.objects.count
    let perSegment = count / segments.bodies.count

    let db = try PostgresConnection(databaseURL)
    defer { db.close() }
    func createBaseline(_ name: String) throws {
        try db.execute(
            """
            CREATE TABLE "\(name)" ("_id" bytea NOT NULL PRIMARY KEY, "_ingested_at" timestamptz NOT NULL DEFAULT now(),
              "deviceId" text, "temperatureInFahrenheit" double precision, "barometricPressureInHg" double precision,
              "windSpeedInMph" bigint)
            """)
    }
    let columns = #"("_id", "deviceId", "temperatureInFahrenheit", "barometricPressureInHg", "windSpeedInMph")"#
    let batches = stride(from: 0, to: count, by: perSegment).map { start in
        postgresCopyText(segments.objects[start..<min(count, start + perSegment)])
    }

    // 1. Through the server and a bare COPY per segment (one connection) into
    // a table of the sink's shape, in turns.
    let config = try sinkBenchConfig(directory: directory, sink: #"{ "kind": "postgres", "connection": "\#(databaseURL)" }"#)
    try createBaseline("baseline_per_segment")
    let process = try ServerBenchProcess(directory: directory, config: config)
    defer { process.stop() }
    let server = try alternating(segments, clients: clients, rounds: rounds, server: process, database: pid) { part in
        for index in part {
            try db.copyIn(#"COPY "baseline_per_segment" \#(columns) FROM STDIN"#, data: batches[index])
        }
    }
    let perSegmentRate = server.baseline
    process.stop()
    let stored = try db.queryText(#"SELECT count(*) FROM "WeatherSensor""#).first?.first ?? nil
    guard stored == String(count) else { throw ServerBenchError("PostgreSQL holds \(stored ?? "nil") of \(count) objects") }

    // 2. For scale: the same batches over several connections, and all rows in one COPY.
    try createBaseline("baseline_parallel")
    let parallelRate = try parallelLoad(batches, objects: count, connections: clients) { () throws -> ([UInt8]) throws -> Void in
        let connection = try PostgresConnection(databaseURL)
        return { batch in try connection.copyIn(#"COPY "baseline_parallel" \#(columns) FROM STDIN"#, data: batch) }
    }
    let whole = postgresCopyText(segments.objects[...])
    try createBaseline("baseline_one_copy")
    let start = nowNanoseconds()
    try db.copyIn(#"COPY "baseline_one_copy" \#(columns) FROM STDIN"#, data: whole)
    let oneCopyRate = Double(count) / (Double(nowNanoseconds() - start) / 1e9)
    for table in ["baseline_per_segment", "baseline_parallel", "baseline_one_copy"] {
        let rows = try db.queryText("SELECT count(*) FROM \"\(table)\"").first?.first ?? nil
        guard rows == String(count) else { throw ServerBenchError("\(table) holds \(rows ?? "nil") of \(count) rows") }
    }

    return [
        Figure(
            group: "sinks",
            name: "PostgreSQL: \(segments.bodies.count) segments × \(perSegment) WeatherSensor through ingest-server, \(clients) clients",
            value: server.server, unit: "objects/s",
            baseline: ("bare COPY text, same rows, \(perSegment) per COPY/txn, 1 connection, in turns", perSegmentRate),
            target: .ratioAtLeast(1.0)),
        Figure(
            group: "sinks", name: "PostgreSQL: server CPU time per object (user + system)",
            value: server.serverCPUPerObject * 1e6, unit: "µs", baseline: nil, target: nil),
        Figure(
            group: "sinks", name: "PostgreSQL: bare COPY, \(perSegment) per COPY/txn, \(clients) connections in parallel (for scale)",
            value: parallelRate, unit: "objects/s", baseline: nil, target: nil),
        Figure(
            group: "sinks", name: "PostgreSQL: bare COPY of all \(count) rows in one statement (for scale)",
            value: oneCopyRate, unit: "objects/s", baseline: nil, target: nil),
    ] + databaseCPUFigures(server, database: "PostgreSQL", baselineName: "bare COPYs")
}

/// The rows in COPY text format for the columns `_id, deviceId,
/// temperatureInFahrenheit, barometricPressureInHg, windSpeedInMph`.
private func postgresCopyText(_ objects: ArraySlice<ServerBenchSegments.Object>) -> [UInt8] {
    let hex = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(objects.count * 80)
    for object in objects {
        out.append(contentsOf: [0x5C, 0x5C, 0x78])  // \\x: bytea hex, backslash escaped for COPY
        for byte in object.id { out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0xF)]) }
        out.append(0x09)
        out.append(contentsOf: object.deviceId.utf8)  // the generator's ids need no escaping
        out.append(0x09)
        out.append(contentsOf: object.temperature.description.utf8)
        out.append(0x09)
        out.append(contentsOf: object.pressure.description.utf8)
        out.append(0x09)
        out.append(contentsOf: String(object.wind).utf8)
        out.append(0x0A)
    }
    return out
}

/// `postgresql://user@host:port/db?query` with `db` replaced.
func replacingDatabase(in uri: String, with database: String) -> String {
    guard let scheme = uri.range(of: "://") else { return uri + " dbname=\(database)" }
    let rest = uri[scheme.upperBound...]
    let query = rest.firstIndex(of: "?")
    let authority = rest[..<(rest.firstIndex(of: "/") ?? query ?? rest.endIndex)]
    let suffix = query.map { String(rest[$0...]) } ?? ""
    return String(uri[..<scheme.upperBound]) + authority + "/" + database + suffix
}

// MARK: - ClickHouse

private func clickHouseSinkFigures(
    url: String, pid: Int32?, segments: ServerBenchSegments, clients: Int, rounds: Int, directory: String
) throws -> [Figure] {
    let database = "ingest_bench_\(getpid())"
    let client = try ClickHouseClient(url: url)
    defer { client.closeIdle() }
    try client.execute("DROP DATABASE IF EXISTS `\(database)`")
    defer { _ = try? client.execute("DROP DATABASE IF EXISTS `\(database)`") }
    let count = segments.objects.count
    let perSegment = count / segments.bodies.count

    func createBaseline(_ name: String) throws {
        try client.execute(
            """
            CREATE TABLE `\(database)`.`\(name)` (`_id` FixedString(12), `_ingested_at` DateTime DEFAULT now(),
              `deviceId` Nullable(String), `temperatureInFahrenheit` Nullable(Float64),
              `barometricPressureInHg` Nullable(Float64), `windSpeedInMph` Nullable(Int64))
            ENGINE = ReplacingMergeTree ORDER BY `_id`
            """)
    }
    let batches = stride(from: 0, to: count, by: perSegment).map { start in
        clickHouseJSONEachRow(segments.objects[start..<min(count, start + perSegment)])
    }

    // 1. Through the server (it creates the database and the table) and bare
    // JSONEachRow inserts of a segment's rows into a table of the sink's
    // shape, in turns.
    let config = try sinkBenchConfig(
        directory: directory,
        sink: #"{ "kind": "clickhouse", "url": "\#(url)", "database": "\#(database)" }"#)
    try client.execute("CREATE DATABASE IF NOT EXISTS `\(database)`")
    try createBaseline("baseline_per_segment")
    let process = try ServerBenchProcess(directory: directory, config: config)
    defer { process.stop() }
    let server = try alternating(segments, clients: clients, rounds: rounds, server: process, database: pid) { part in
        for index in part {
            try client.execute("INSERT INTO `\(database)`.`baseline_per_segment` FORMAT JSONEachRow", body: batches[index])
        }
    }
    let perSegmentRate = server.baseline
    process.stop()
    let stored = try client.query("SELECT count() FROM `\(database)`.`WeatherSensor`").trimmingCharacters(in: .whitespacesAndNewlines)
    guard stored == String(count) else { throw ServerBenchError("ClickHouse holds \(stored) of \(count) objects") }

    // 2. For scale: the same batches over several connections, and all rows in one insert.
    try createBaseline("baseline_parallel")
    let parallelRate = try parallelLoad(batches, objects: count, connections: clients) { () throws -> ([UInt8]) throws -> Void in
        let connection = try ClickHouseClient(url: url)
        return { batch in try connection.execute("INSERT INTO `\(database)`.`baseline_parallel` FORMAT JSONEachRow", body: batch) }
    }
    let whole = clickHouseJSONEachRow(segments.objects[...])
    try createBaseline("baseline_one_insert")
    let start = nowNanoseconds()
    try client.execute("INSERT INTO `\(database)`.`baseline_one_insert` FORMAT JSONEachRow", body: whole)
    let oneInsertRate = Double(count) / (Double(nowNanoseconds() - start) / 1e9)
    for table in ["baseline_per_segment", "baseline_parallel", "baseline_one_insert"] {
        let rows = try client.query("SELECT count() FROM `\(database)`.`\(table)`").trimmingCharacters(in: .whitespacesAndNewlines)
        guard rows == String(count) else { throw ServerBenchError("\(table) holds \(rows) of \(count) rows") }
    }
    // The raw-byte ids arrived as 12 bytes, equal to the sink's.
    let differing = try client.query(
        """
        SELECT count() FROM `\(database)`.`baseline_per_segment` WHERE `_id` NOT IN (SELECT `_id` FROM `\(database)`.`WeatherSensor`)
        """
    ).trimmingCharacters(in: .whitespacesAndNewlines)
    guard differing == "0" else { throw ServerBenchError("\(differing) baseline ids differ from the sink's") }

    return [
        Figure(
            group: "sinks",
            name: "ClickHouse: \(segments.bodies.count) segments × \(perSegment) WeatherSensor through ingest-server, \(clients) clients",
            value: server.server, unit: "objects/s",
            baseline: ("bare INSERT FORMAT JSONEachRow over HTTP, same rows, \(perSegment) per insert, in turns", perSegmentRate),
            target: .ratioAtLeast(1.0)),
        Figure(
            group: "sinks", name: "ClickHouse: server CPU time per object (user + system)",
            value: server.serverCPUPerObject * 1e6, unit: "µs", baseline: nil, target: nil),
        Figure(
            group: "sinks", name: "ClickHouse: bare JSONEachRow, \(perSegment) per insert, \(clients) connections in parallel (for scale)",
            value: parallelRate, unit: "objects/s", baseline: nil, target: nil),
        Figure(
            group: "sinks", name: "ClickHouse: bare JSONEachRow insert of all \(count) rows in one statement (for scale)",
            value: oneInsertRate, unit: "objects/s", baseline: nil, target: nil),
    ] + databaseCPUFigures(server, database: "ClickHouse", baselineName: "bare inserts")
}

/// With the database's CPU measured: its CPU time per object in each path,
/// and every process's of each path together.
private func databaseCPUFigures(_ rates: TurnRates, database: String, baselineName: String) -> [Figure] {
    guard let databaseCPU = rates.databaseCPUPerObject else { return [] }
    let throughServer = databaseCPU.server + rates.serverCPUPerObject + rates.benchCPUPerObject.server
    let bare = databaseCPU.baseline + rates.benchCPUPerObject.baseline
    return [
        Figure(
            group: "sinks", name: "\(database): its CPU time per object through the server",
            value: databaseCPU.server * 1e6, unit: "µs",
            baseline: ("in the \(baselineName), in turns", databaseCPU.baseline * 1e6), target: nil),
        Figure(
            group: "sinks",
            name: "\(database): CPU time per object of \(database), ingest-server and the clients together, through the server",
            value: throughServer * 1e6, unit: "µs",
            baseline: ("\(database) and the \(baselineName)' client together", bare * 1e6), target: nil),
    ]
}

/// The rows as JSONEachRow. `_id` is a JSON string of its 12 raw bytes
/// (ClickHouse copies bytes of a JSON string as they are; `"`, `\` and
/// control bytes are escaped), so the FixedString(12) holds the same bytes
/// as the sink writes.
private func clickHouseJSONEachRow(_ objects: ArraySlice<ServerBenchSegments.Object>) -> [UInt8] {
    let hex = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(objects.count * 140)
    for object in objects {
        out.append(contentsOf: #"{"_id":""#.utf8)
        for byte in object.id {
            switch byte {
            case 0x22, 0x5C: out.append(0x5C); out.append(byte)
            case 0..<0x20: out.append(contentsOf: #"\u00"#.utf8); out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(contentsOf: #"","deviceId":""#.utf8)
        out.append(contentsOf: object.deviceId.utf8)  // the generator's ids need no escaping
        out.append(contentsOf: #"","temperatureInFahrenheit":"#.utf8)
        out.append(contentsOf: object.temperature.description.utf8)
        out.append(contentsOf: #","barometricPressureInHg":"#.utf8)
        out.append(contentsOf: object.pressure.description.utf8)
        out.append(contentsOf: #","windSpeedInMph":"#.utf8)
        out.append(contentsOf: String(object.wind).utf8)
        out.append(contentsOf: "}\n".utf8)
    }
    return out
}

/// Sends `batches` over `connections` connections in parallel (connection
/// `i`, made by `open` on its own thread, sends batches `i`,
/// `i + connections`, …); returns `objects` (all batches' rows) per second.
private func parallelLoad(
    _ batches: [[UInt8]], objects: Int, connections: Int,
    open: @escaping @Sendable () throws -> ([UInt8]) throws -> Void
) throws -> Double {
    let failures = LockedBox<[String]>([])
    let start = nowNanoseconds()
    DispatchQueue.concurrentPerform(iterations: connections) { lane in
        do {
            let send = try open()
            for index in stride(from: lane, to: batches.count, by: connections) { try send(batches[index]) }
        } catch {
            failures.withLock { $0.append("\(error)") }
        }
    }
    let seconds = Double(nowNanoseconds() - start) / 1e9
    if let failure = failures.withLock({ $0.first }) { throw ServerBenchError("parallel baseline: \(failure)") }
    return Double(objects) / seconds
}
