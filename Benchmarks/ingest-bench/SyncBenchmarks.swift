#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import IngestSupport

// End to end: the client SDK in this process, the `ingest-server` (built next
// to this binary) in its own process on 127.0.0.1, its SQLite sink at
// synchronous=FULL. Baseline: the same objects inserted directly into a
// SQLite table of the sink's shape with a prepared statement in batched
// transactions, in the same run.
//
// Sizes: INGEST_BENCH_SYNC_OBJECTS (default 500,000),
// INGEST_BENCH_SYNC_LATENCY_OBJECTS (default 100,000, 100 every 10 ms). For
// experiments: INGEST_BENCH_SYNC_SEGMENT_BYTES (the store's
// maxSegmentBytes, default 4 MiB) and INGEST_BENCH_SYNC_UPLOADS
// (maxUploadsInFlight, default 4).

/// The seed's WeatherSensor.
final class SyncBenchSensor: AsymmetricObject {
    override class func className() -> String { "WeatherSensor" }
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

/// The seed's WeatherSensor plus the commit time, for latency.
final class BenchTimedSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
    @Persisted var committedAtMillis: Int
}

struct SyncBenchError: Error, CustomStringConvertible {
    var description: String
}

/// Runs `body` on a detached task and blocks until it finishes.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = LockedBox<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            let value = try await body()
            box.withLock { $0 = .success(value) }
        } catch {
            box.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try box.withLock { $0 }!.get()
}

// The server process is ServerBenchProcess (ServerBenchmarks.swift); this
// group also reads the rows it stored.
extension ServerBenchProcess {
    /// The first column of each row, as Int64.
    func query(_ sql: String) -> [Int64] {
        guard let db = try? SQLiteConnection(path: dataPath + "/\(appId).sqlite", options: .init(access: .readOnly)),
            let statement = try? db.makeStatement(sql: sql)
        else { return [] }
        var rows: [Int64] = []
        while (try? statement.step()) == true { rows.append(statement.int64(at: 0)) }
        return rows
    }
}

/// The direct-SQLite baseline: the sink's table shape, one prepared insert,
/// transactions of `batch` rows, WAL, synchronous=FULL.
func directSQLiteObjectsPerSecond(count: Int, batch: Int, path: String) throws -> Double {
    let db = try SQLiteConnection(path: path)
    defer { db.close() }
    for sql in [
        "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        #"CREATE TABLE WeatherSensor ("_id" BLOB NOT NULL PRIMARY KEY, "_ingested_at" INTEGER NOT NULL, deviceId TEXT, temperatureInFahrenheit REAL, barometricPressureInHg REAL, windSpeedInMph INTEGER) WITHOUT ROWID"#,
    ] {
        try db.execute(sql: sql)
    }
    let insert = try db.cachedStatement(sql: "INSERT INTO WeatherSensor VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(\"_id\") DO NOTHING")
    let start = nowNanoseconds()
    var done = 0
    while done < count {
        try db.begin(.immediate)
        for _ in 0..<min(batch, count - done) {
            let id = ObjectId.generate()
            try id.withBytes { raw in try insert.bind(blob: raw, at: 1) }
            try insert.bind(Int64(Date().timeIntervalSince1970 * 1000), at: 2)
            try insert.bind("WX1278UIT", at: 3)
            try insert.bind(Double(Float(66.7)), at: 4)
            try insert.bind(Double(Float(29.65)), at: 5)
            try insert.bind(Int64(2), at: 6)
            _ = try insert.step()
            insert.reset()
        }
        try db.commit()
        done += batch
    }
    return Double(count) / (Double(nowNanoseconds() - start) / 1e9)
}

func syncBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let count = Int(environment["INGEST_BENCH_SYNC_OBJECTS"] ?? "") ?? 500_000
    let directory = NSTemporaryDirectory() + "ingest-bench-sync-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let server = try ServerBenchProcess(directory: directory)
    defer { server.stop() }
    var configuration = App.Configuration(
        baseURL: URL(string: "http://127.0.0.1:\(server.port)")!,
        metadataDirectory: directory + "/client")
    configuration.sync.maximumBackoff = 1
    if let bytes = Int(environment["INGEST_BENCH_SYNC_SEGMENT_BYTES"] ?? "") { configuration.segmentStore.maxSegmentBytes = bytes }
    if let uploads = Int(environment["INGEST_BENCH_SYNC_UPLOADS"] ?? "") { configuration.sync.maxUploadsInFlight = uploads }
    let app = App(id: server.appId, configuration: configuration)
    let user = try blocking { try await app.login(credentials: .anonymous) }

    // 1. Sustained objects/s from create to committed in the server's SQLite.
    var config = user.flexibleSyncConfiguration()
    config.objectTypes = [SyncBenchSensor.self, BenchTimedSensor.self]
    let cpuBefore = (client: processCPUSeconds(), server: server.cpuSeconds())
    let start = nowNanoseconds()
    try commitWeatherSensors(count, into: Realm(configuration: config))
    let committedSeconds = Double(nowNanoseconds() - start) / 1e9
    try blocking { try await user.session.wait(for: .upload, timeout: 600) }
    let seconds = Double(nowNanoseconds() - start) / 1e9
    let clientCPU = (processCPUSeconds() - cpuBefore.client) / Double(count)
    let serverCPU = (server.cpuSeconds() - cpuBefore.server) / Double(count)
    let stored = server.query("SELECT count(*) FROM WeatherSensor").first ?? 0
    guard stored == Int64(count) else { throw SyncBenchError(description: "the server holds \(stored) of \(count) objects") }
    let endToEnd = Double(count) / seconds
    let baselineCPUBefore = processCPUSeconds()
    let baseline = try directSQLiteObjectsPerSecond(count: count, batch: 10_000, path: directory + "/baseline.sqlite")
    let baselineCPU = (processCPUSeconds() - baselineCPUBefore) / Double(count)

    // 2. Commit to durable in the server at 10k objects/s: 100 objects every 10 ms for 10 s.
    let latencyObjects = Int(environment["INGEST_BENCH_SYNC_LATENCY_OBJECTS"] ?? "") ?? 100_000
    try {
        let realm = try Realm(configuration: config)
        let begin = nowNanoseconds()
        for tick in 0..<(latencyObjects / 100) {
            let due = begin + UInt64(tick) * 10_000_000
            while nowNanoseconds() < due { usleep(200) }
            let millis = Int(Date().timeIntervalSince1970 * 1000)
            try realm.write {
                for _ in 0..<100 {
                    realm.create(
                        BenchTimedSensor.self,
                        value: [
                            "_id": ObjectId.generate(), "deviceId": "WX1278UIT",
                            "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
                            "windSpeedInMph": 2, "committedAtMillis": millis,
                        ])
                }
            }
        }
    }()
    try blocking { try await user.session.wait(for: .upload, timeout: 120) }
    let delays = server.query("SELECT _ingested_at - committedAtMillis FROM BenchTimedSensor").sorted()
    guard !delays.isEmpty else { throw SyncBenchError(description: "no timed objects arrived") }
    let median = Double(delays[delays.count / 2])
    let p99 = Double(delays[min(delays.count - 1, delays.count * 99 / 100)])
    _ = try blocking { try await user.logOut() }

    return [
        Figure(
            group: "sync", name: "end to end, create to the server's SQLite (\(count) WeatherSensor, txn of 1,000)",
            value: endToEnd, unit: "objects/s", baseline: ("direct SQLite inserts, txn of 10,000", baseline),
            target: .ratioAtLeast(0.75)),
        Figure(
            group: "sync", name: "of which the client's create and commit into the segment store", value: Double(count) / committedSeconds,
            unit: "objects/s", baseline: nil, target: nil),
        Figure(
            group: "sync", name: "CPU time per object (user + system) during that run: this process (create, seal, upload)",
            value: clientCPU * 1e6, unit: "µs", baseline: ("CPU per object of the direct SQLite inserts", baselineCPU * 1e6),
            target: nil),
        Figure(
            group: "sync", name: "CPU time per object (user + system) during that run: the server", value: serverCPU * 1e6, unit: "µs",
            baseline: nil, target: nil),
        Figure(
            group: "sync", name: "commit to durable in the server at 10k objects/s, median", value: median, unit: "ms",
            baseline: nil, target: .atMost(1_500)),
        Figure(
            group: "sync", name: "commit to durable in the server at 10k objects/s, p99", value: p99, unit: "ms",
            baseline: nil, target: nil),
    ]
}

/// Commits `count` WeatherSensor readings (rounded up to a whole transaction)
/// in transactions of 1,000, created from dictionaries as the seed does.
func commitWeatherSensors(_ count: Int, into realm: Realm) throws {
    var written = 0
    while written < count {
        try realm.write {
            for _ in 0..<1000 {
                realm.create(
                    SyncBenchSensor.self,
                    value: [
                        "_id": ObjectId.generate(), "deviceId": "WX1278UIT",
                        "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
                        "windSpeedInMph": 2,
                    ])
            }
        }
        written += 1000
    }
}
