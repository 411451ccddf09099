import DataIngest
import Foundation
import IngestCore
import IngestServer
import IngestSupport

/// The SQLite layer's two hot users, in process: a local realm's store
/// (inserts in transactions of 1,000, a lookup by primary key, a filtered
/// and sorted query) and the server's SQLite sink (segments of 1,000
/// WeatherSensor objects, each bound from its BSON bytes), each next to the
/// same work done directly with prepared statements on a table of the same
/// shape, in the same run. `INGEST_BENCH_SQLITE_SCALE` (default 1) scales
/// the object counts, for runs under valgrind.
func sqliteBenchmarks() throws -> [Figure] {
    let scale = ProcessInfo.processInfo.environment["INGEST_BENCH_SQLITE_SCALE"].flatMap(Double.init) ?? 1
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-sqlite-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let batch = 1_000
    let transactions = max(2, Int(20 * scale))
    let lookups = max(1_000, Int(20_000 * scale))

    // MARK: Local store
    let schema = try Schema([
        ObjectSchema(
            className: "Reading", kind: .topLevel,
            properties: [
                Property(name: "_id", type: .objectId, isPrimaryKey: true),
                Property(name: "deviceId", type: .string, isIndexed: true),
                Property(name: "temperature", type: .double),
                Property(name: "pressure", type: .double),
                Property(name: "wind", type: .int),
            ])
    ])
    let store = try LocalStore(fileURL: directory.appendingPathComponent("local.realm"), schema: schema)
    defer { store.close() }
    var ids: [ObjectId] = []
    func reading(_ n: Int) -> BSONDocument {
        let id = ObjectId.generate()
        ids.append(id)
        return [
            "_id": .objectId(id), "deviceId": .string("WX\(n % 100)"), "temperature": .double(Double(n % 90)),
            "pressure": .double(29.65), "wind": .int64(Int64(n % 30)),
        ]
    }
    var documents: [[BSONDocument]] = []
    for t in 0..<transactions { documents.append((0..<batch).map { reading(t * batch + $0) }) }
    var start = nowNanoseconds()
    for transaction in documents {
        try store.write { tx in for document in transaction { _ = try tx.insert(document, into: "Reading") } }
    }
    let localInsert = Double(nowNanoseconds() - start) / Double(transactions * batch)

    // Every id in a fixed order that jumps around the table (7919 is prime).
    func id(_ n: Int) -> ObjectId { ids[(n &* 7919) % ids.count] }
    start = nowNanoseconds()
    for n in 0..<lookups {
        let id = id(n)
        guard try store.object("Reading", primaryKey: .objectId(id)) != nil else { throw BenchmarkError("lookup missed") }
    }
    let localLookup = Double(nowNanoseconds() - start) / Double(lookups)

    let query = try LocalQuery("Reading").filter("deviceId == %@ AND temperature > %@", "WX7", 40.0)
        .sorted(by: "temperature", ascending: false).limit(50)
    let queries = max(100, lookups / 20)
    start = nowNanoseconds()
    for _ in 0..<queries { blackHole(try store.objects(query).count) }
    let localQuery = Double(nowNanoseconds() - start) / Double(queries)

    // The same rows, prepared statements on a table of the same shape.
    let direct = try SQLiteConnection(path: directory.appendingPathComponent("direct.sqlite").path)
    defer { direct.close() }
    for sql in [
        "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        """
        CREATE TABLE "Reading" ("_id" BLOB NOT NULL PRIMARY KEY, "deviceId" TEXT NOT NULL, "temperature" REAL NOT NULL,
          "pressure" REAL NOT NULL, "wind" INTEGER NOT NULL)
        """, #"CREATE INDEX "idx_Reading_deviceId" ON "Reading" ("deviceId")"#,
    ] {
        try direct.execute(sql: sql)
    }
    start = nowNanoseconds()
    for transaction in documents {
        try direct.begin(.immediate)
        for document in transaction {
            try direct.run(
                sql: #"INSERT INTO "Reading" ("_id", "deviceId", "temperature", "pressure", "wind") VALUES (?, ?, ?, ?, ?)"#,
                arguments: directValues(document))
        }
        try direct.commit()
    }
    let directInsert = Double(nowNanoseconds() - start) / Double(transactions * batch)
    start = nowNanoseconds()
    for n in 0..<lookups {
        let id = id(n)
        try direct.begin()
        let rows = try direct.rows(
            sql: #"SELECT "_id", "deviceId", "temperature", "pressure", "wind" FROM "Reading" WHERE "_id" = ?"#,
            arguments: [.blob(id.bytes)])
        try direct.commit()
        guard !rows.isEmpty else { throw BenchmarkError("direct lookup missed") }
    }
    let directLookup = Double(nowNanoseconds() - start) / Double(lookups)

    // MARK: SQLite sink
    let sink = try SQLiteSink(path: directory.appendingPathComponent("sink.sqlite").path)
    defer { sink.close() }
    try sink.migrate(
        to: try Schema([
            ObjectSchema(
                className: "WeatherSensor", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "deviceId", type: .string),
                    Property(name: "temperatureInFahrenheit", type: .double),
                    Property(name: "barometricPressureInHg", type: .double),
                    Property(name: "windSpeedInMph", type: .int),
                ])
        ]))
    let sensor = WeatherSensorBSON()
    var segments: [[SinkObject]] = []
    for _ in 0..<transactions {
        segments.append(
            (0..<batch).map { _ in
                sensor.next()
                return SinkObject(collection: "WeatherSensor", bson: sensor.bytes)
            })
    }
    let storeId = SegmentStoreID.random()
    let answer = Array(#"{"accepted":1000}"#.utf8)
    start = nowNanoseconds()
    for (number, objects) in segments.enumerated() {
        let result = try sink.write(objects, receipt: SegmentKey(storeId: storeId, segmentNumber: UInt64(number + 1))) { _ in answer }
        guard case .written = result else { throw BenchmarkError("segment \(number + 1) was not written") }
    }
    let sinkWrite = Double(nowNanoseconds() - start) / Double(transactions * batch)
    let baselineObjects = segments.joined().map { object -> ServerBenchSegments.Object in
        let document = try! BSONDocument(bson: object.bson)
        guard case .objectId(let id)? = document["_id"], case .string(let device)? = document["deviceId"],
            case .double(let temperature)? = document["temperatureInFahrenheit"],
            case .double(let pressure)? = document["barometricPressureInHg"],
            case .int64(let wind)? = document["windSpeedInMph"]
        else { fatalError("unexpected WeatherSensor document") }
        return ServerBenchSegments.Object(id: id.bytes, deviceId: device, temperature: temperature, pressure: pressure, wind: wind)
    }
    let directSink =
        1e9
        / (try directSinkShapedInserts(
            baselineObjects, batch: batch,
            path: directory.appendingPathComponent("direct-sink.sqlite").path))

    return [
        Figure(
            group: "sqlite", name: "local store insert (txn of 1,000)", value: localInsert / 1000, unit: "µs/object",
            baseline: ("direct SQLite insert", directInsert / 1000)),
        Figure(
            group: "sqlite", name: "local store object by primary key", value: localLookup / 1000, unit: "µs/lookup",
            baseline: ("direct SQLite select", directLookup / 1000)),
        Figure(group: "sqlite", name: "local store query (filter, sort, limit 50)", value: localQuery / 1000, unit: "µs/query"),
        Figure(
            group: "sqlite", name: "SQLite sink write, in process (segments of 1,000)", value: sinkWrite / 1000, unit: "µs/object",
            baseline: ("direct SQLite insert, sink's shape", directSink / 1000)),
    ]
}

/// A Reading document's values in column order, for the direct baseline.
private func directValues(_ document: BSONDocument) -> [SQLiteValue] {
    guard case .objectId(let id)? = document["_id"], case .string(let device)? = document["deviceId"],
        case .double(let temperature)? = document["temperature"], case .double(let pressure)? = document["pressure"],
        case .int64(let wind)? = document["wind"]
    else { return [] }
    return [.blob(id.bytes), .text(device), .real(temperature), .real(pressure), .integer(wind)]
}
