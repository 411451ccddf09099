import DataIngest
import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport

/// Measures the segment store on the seed's WeatherSensor (a 5-field BSON
/// document built by hand: ObjectId, string, two doubles, an int64) against a
/// SQLite table used as a queue (WAL, synchronous=NORMAL, prepared inserts)
/// and JSONEncoder output appended to a file, in the same run.
///
/// - Parameter scale: 1 for the published figures; smaller for a quick check.
func storeBenchmarks(scale: Double = 1) throws -> [Figure] {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-store-\(getpid())").path
    try? FileManager.default.removeItem(atPath: root)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    func count(_ n: Int) -> Int { max(1_000, Int(Double(n) * scale)) }
    var results: [Figure] = []
    let sensor = WeatherSensorBSON()

    // Sustained ingest, compression included (the clock stops when the last
    // segment is sealed), interval durability (the default).
    let bigTransactions = count(1_000_000)
    let readBack = ReadBackRate()
    let (storeBig, bytesPerObject) = try measureStoreIngest(
        root + "/big", sensor: sensor, objects: bigTransactions, perTransaction: 1_000, readBack: readBack)
    let smallTransactions = count(200_000)
    let (storeSmall, _) = try measureStoreIngest(root + "/small", sensor: sensor, objects: smallTransactions, perTransaction: 1)
    let sqliteBig = try measureSQLiteQueue(root + "/queue-big.sqlite", sensor: sensor, objects: bigTransactions, perTransaction: 1_000)
    let sqliteSmall = try measureSQLiteQueue(root + "/queue-small.sqlite", sensor: sensor, objects: count(100_000), perTransaction: 1)
    let (jsonRate, jsonBytesPerObject) = try measureJSONAppend(root + "/events.jsonl", objects: count(200_000))
    // The same with encryption at rest (AES-256-GCM, Docs/Security.md), next to the unencrypted run above.
    let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 7) })
    let (storeBigEncrypted, _) = try measureStoreIngest(
        root + "/big-aes", sensor: sensor, objects: bigTransactions, perTransaction: 1_000, encryptionKey: key)
    let (storeSmallEncrypted, _) = try measureStoreIngest(
        root + "/small-aes", sensor: sensor, objects: smallTransactions, perTransaction: 1, encryptionKey: key)

    results.append(
        Figure(
            group: "store", name: "sustained ingest, 1,000-object transactions, gzip, interval durability",
            value: storeBig, unit: "objects/s", baseline: ("SQLite queue, 1,000-object transactions", sqliteBig),
            target: .atLeast(1_500_000)))
    results.append(
        Figure(
            group: "store", name: "ratio to SQLite queue, 1,000-object transactions", value: storeBig / sqliteBig, unit: "×",
            baseline: nil, target: .atLeast(1)))
    results.append(
        Figure(
            group: "store", name: "sustained ingest, 1-object transactions, gzip, interval durability",
            value: storeSmall, unit: "objects/s", baseline: ("SQLite queue, 1-object transactions", sqliteSmall),
            target: .atLeast(1_000_000)))
    results.append(
        Figure(
            group: "store", name: "sustained ingest, 1,000-object transactions, gzip, interval durability, AES-256-GCM at rest",
            value: storeBigEncrypted, unit: "objects/s", baseline: ("the same without encryption", storeBig), target: nil))
    results.append(
        Figure(
            group: "store", name: "sustained ingest, 1-object transactions, gzip, interval durability, AES-256-GCM at rest",
            value: storeSmallEncrypted, unit: "objects/s", baseline: ("the same without encryption", storeSmall), target: nil))
    results.append(
        Figure(
            group: "store", name: "read back sealed segments (inflate, CRC, records), as the server reads uploads",
            value: readBack.value, unit: "objects/s", baseline: nil, target: nil))
    results.append(
        Figure(
            group: "store", name: "JSONEncoder + append to file (analytics-SDK style)", value: jsonRate, unit: "objects/s",
            baseline: nil, target: nil))
    results.append(
        Figure(
            group: "store", name: "bytes on disk per object (sealed .seg.gz)", value: bytesPerObject, unit: "bytes",
            baseline: ("JSON lines file", jsonBytesPerObject), target: .ratioAtLeast(4)))

    // The gzip level: compress one 4 MiB segment's worth of frames with the
    // sealer's level 1 (the project's own encoder, FastDeflater) and with
    // zlib's levels 1 and 6.
    var frames: [UInt8] = []
    while frames.count < 4 << 20 {
        sensor.next()
        try SegmentFormat.appendRecord(collection: "WeatherSensor", document: sensor.bytes, to: &frames)
    }
    let recordsInFrames = Double(frames.count) / Double(sensor.frameSizeEstimate - SegmentFormat.commitFrameSize)
    var levelFigures: [(mbPerSecond: Double, bytesPerObject: Double)] = []
    for compressor in [{ try Gzip.makeCompressor(level: 1) }, { try GzipDeflater(level: 1) }, { try GzipDeflater(level: 6) }]
        as [() throws -> any GzipCompressing]
    {
        var times: [Double] = []
        var size = 0
        for _ in 0..<3 {
            let start = storeBenchNow()
            let deflater = try compressor()
            var out: [UInt8] = []
            out.reserveCapacity(frames.count / 4)
            try deflater.compress(frames, appendingTo: &out)
            try deflater.finish(appendingTo: &out)
            size = out.count
            times.append(Double(storeBenchNow() - start) / 1e9)
        }
        levelFigures.append((Double(frames.count) / median(times) / 1e6, Double(size) / recordsInFrames))
    }
    results.append(
        Figure(
            group: "store", name: "gzip level 1 (default: the project's deflate encoder) on segment frames",
            value: levelFigures[0].mbPerSecond, unit: "MB/s", baseline: ("zlib level 1", levelFigures[1].mbPerSecond), target: nil))
    results.append(
        Figure(
            group: "store", name: "gzip level 1 (default: the project's deflate encoder) bytes per object",
            value: levelFigures[0].bytesPerObject, unit: "bytes", baseline: ("zlib level 1", levelFigures[1].bytesPerObject),
            target: nil))
    results.append(
        Figure(
            group: "store", name: "zlib level 1 on segment frames", value: levelFigures[1].mbPerSecond, unit: "MB/s",
            baseline: ("zlib level 6", levelFigures[2].mbPerSecond), target: nil))
    results.append(
        Figure(
            group: "store", name: "zlib level 1 bytes per object", value: levelFigures[1].bytesPerObject, unit: "bytes",
            baseline: ("zlib level 6", levelFigures[2].bytesPerObject), target: nil))

    // Latency of a one-object commit at each durability level.
    let bare = try measureBareWriteSync(root + "/bare", bytes: sensor.frameSizeEstimate, iterations: 100)
    for (label, durability, iterations, rounds) in [
        ("none", SegmentStore.Durability.none, 20_000, 9),
        ("interval (100 ms)", .interval(milliseconds: 100), 20_000, 9),
        ("full", .full, 100, 5),
    ] as [(String, SegmentStore.Durability, Int, Int)] {
        let median = try measureCommitLatency(
            root + "/latency-\(label.prefix(4))", sensor: sensor, durability: durability, iterations: iterations, rounds: rounds)
        switch durability {
        case .full:
            results.append(
                Figure(
                    group: "store", name: "1-object commit latency, full durability (median)", value: median / 1_000, unit: "µs",
                    baseline: ("bare write + fdatasync", bare / 1_000), target: .ratioAtLeast(1 / 1.5)))
        case .interval:
            results.append(
                Figure(
                    group: "store", name: "1-object commit latency, interval durability (median)", value: median / 1_000, unit: "µs",
                    baseline: nil, target: .atMost(3)))
        case .none:
            results.append(
                Figure(
                    group: "store", name: "1-object commit latency, no sync (median)", value: median / 1_000, unit: "µs",
                    baseline: nil, target: nil))
        }
        if case .interval = durability {
            let encrypted = try measureCommitLatency(
                root + "/latency-aes", sensor: sensor, durability: durability, iterations: iterations, rounds: rounds, encryptionKey: key)
            results.append(
                Figure(
                    group: "store", name: "1-object commit latency, interval durability, AES-256-GCM at rest (median)",
                    value: encrypted / 1_000, unit: "µs", baseline: ("the same without encryption", median / 1_000), target: nil))
        }
    }
    return results
}

// MARK: - The document

/// The seed's WeatherSensor as BSON, built by hand, with a fresh `_id` per object.
final class WeatherSensorBSON {
    private(set) var bytes: [UInt8] = []
    private var idOffset = 0
    private var deviceOffset = 0
    private var temperatureOffset = 0
    private var pressureOffset = 0
    private var windOffset = 0
    private var counter: UInt32 = 0
    private var random: UInt64 = 0x9E37_79B9_7F4A_7C15

    init() {
        var body: [UInt8] = []
        func key(_ type: UInt8, _ name: String) { body.append(type); body += Array(name.utf8); body.append(0) }
        key(0x07, "_id")
        idOffset = 4 + body.count
        body += ObjectId.generate().bytes
        key(0x02, "deviceId")
        let device = "WX1278UIT"
        withUnsafeBytes(of: Int32(device.utf8.count + 1).littleEndian) { body += $0 }
        deviceOffset = 4 + body.count
        body += Array(device.utf8) + [0]
        key(0x01, "temperatureInFahrenheit")
        temperatureOffset = 4 + body.count
        withUnsafeBytes(of: 66.7.bitPattern.littleEndian) { body += $0 }
        key(0x01, "barometricPressureInHg")
        pressureOffset = 4 + body.count
        withUnsafeBytes(of: 29.65.bitPattern.littleEndian) { body += $0 }
        key(0x12, "windSpeedInMph")
        windOffset = 4 + body.count
        withUnsafeBytes(of: Int64(2).littleEndian) { body += $0 }
        withUnsafeBytes(of: Int32(body.count + 5).littleEndian) { bytes += $0 }
        bytes += body + [0]
    }

    /// The next reading: the ObjectId's 3-byte counter advances, as successive
    /// ObjectIds do, and the device (one of 100), the temperature, the pressure
    /// (one decimal, two decimals) and the wind speed vary pseudo-randomly, so
    /// compression sees realistic rather than identical documents.
    @inline(__always)
    func next() {
        counter &+= 1
        random = random &* 6364136223846793005 &+ 1442695040888963407
        let r = random >> 16
        bytes[idOffset + 9] = UInt8(truncatingIfNeeded: counter >> 16)
        bytes[idOffset + 10] = UInt8(truncatingIfNeeded: counter >> 8)
        bytes[idOffset + 11] = UInt8(truncatingIfNeeded: counter)
        let device = Int(r % 100)
        bytes[deviceOffset + 7] = UInt8(ascii: "0") + UInt8(device / 10)
        bytes[deviceOffset + 8] = UInt8(ascii: "0") + UInt8(device % 10)
        let temperature = 40.0 + Double((r >> 8) % 600) / 10
        let pressure = 29.0 + Double((r >> 20) % 150) / 100
        let wind = Int64((r >> 32) % 40)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: temperature.bitPattern.littleEndian, toByteOffset: temperatureOffset, as: UInt64.self)
            raw.storeBytes(of: pressure.bitPattern.littleEndian, toByteOffset: pressureOffset, as: UInt64.self)
            raw.storeBytes(of: wind.littleEndian, toByteOffset: windOffset, as: Int64.self)
        }
    }

    /// The current reading's values (for the JSON baseline).
    var values: (device: String, temperature: Double, pressure: Double, wind: Int) {
        bytes.withUnsafeBytes { raw in
            (
                String(decoding: bytes[(deviceOffset)..<(deviceOffset + 9)], as: UTF8.self),
                Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: temperatureOffset, as: UInt64.self))),
                Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: pressureOffset, as: UInt64.self))),
                Int(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: windOffset, as: Int64.self)))
            )
        }
    }

    /// The size of one committed 1-object transaction in the active segment.
    var frameSizeEstimate: Int { SegmentFormat.frameOverhead + 2 + 13 + bytes.count + SegmentFormat.commitFrameSize }

    var hex: String { bytes[idOffset..<(idOffset + 12)].map { String(format: "%02x", $0) }.joined() }
}

// MARK: - Measurements

private func storeBenchNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Objects/s until everything is sealed, and sealed bytes per object.
private final class ReadBackRate { var value = 0.0 }

private func measureStoreIngest(
    _ path: String, sensor: WeatherSensorBSON, objects: Int, perTransaction: Int, readBack: ReadBackRate? = nil,
    encryptionKey: Data? = nil
) throws -> (Double, Double) {
    var configuration = SegmentStore.Configuration(directory: path)
    configuration.encryptionKey = encryptionKey
    configuration.durability = .interval(milliseconds: 100)
    configuration.maxPendingBytes = 8 << 30
    let store = try SegmentStore.open(configuration)
    let start = storeBenchNow()
    var written = 0
    while written < objects {
        try store.commit { tx in
            for _ in 0..<perTransaction {
                sensor.next()
                try tx.append(collection: "WeatherSensor", document: sensor.bytes)
            }
        }
        written += perTransaction
    }
    try store.flush()
    let seconds = Double(storeBenchNow() - start) / 1e9
    let sealed = store.pendingSegments().reduce(0) { $0 + $1.byteCount }
    guard store.counters.pendingObjects == written else { throw StoreBenchmarkError("store lost objects") }
    if let readBack {
        // Reading for upload (what the server does with an upload body): inflate, check CRCs, copy out records.
        let readStart = storeBenchNow()
        var records = 0
        for segment in store.pendingSegments() {
            let reader = try store.reader(for: segment)
            while let event = try reader.next() { if case .record = event { records += 1 } }
        }
        guard records == written else { throw StoreBenchmarkError("read back \(records) of \(written) objects") }
        readBack.value = Double(records) / (Double(storeBenchNow() - readStart) / 1e9)
    }
    try store.close()
    try? FileManager.default.removeItem(atPath: path)
    return (Double(written) / seconds, Double(sealed) / Double(written))
}

/// Objects/s into a SQLite table used as a queue (WAL, synchronous=NORMAL).
private func measureSQLiteQueue(_ path: String, sensor: WeatherSensorBSON, objects: Int, perTransaction: Int) throws -> Double {
    let db = try SQLiteConnection(path: path)
    defer { db.close() }
    try db.execute(sql: "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    try db.execute(sql: "CREATE TABLE queue (seq INTEGER PRIMARY KEY, collection TEXT NOT NULL, document BLOB NOT NULL)")
    let insert = try db.cachedStatement(sql: "INSERT INTO queue (collection, document) VALUES (?, ?)")
    let begin = try db.cachedStatement(sql: "BEGIN")
    let commit = try db.cachedStatement(sql: "COMMIT")
    let collection = "WeatherSensor"
    let start = storeBenchNow()
    var written = 0
    while written < objects {
        _ = try begin.step()
        begin.reset()
        for _ in 0..<perTransaction {
            sensor.next()
            try insert.bind(collection, at: 1)
            try sensor.bytes.withUnsafeBytes { raw in try insert.bind(blob: raw, at: 2) }
            _ = try insert.step()
            insert.reset()
        }
        _ = try commit.step()
        commit.reset()
        written += perTransaction
    }
    return Double(written) / (Double(storeBenchNow() - start) / 1e9)
}

private struct JSONWeatherSensor: Codable {
    var _id: String
    var deviceId: String
    var temperatureInFahrenheit: Double
    var barometricPressureInHg: Double
    var windSpeedInMph: Int
}

/// Objects/s of JSONEncoder output appended to a file one event at a time, and bytes per object.
private func measureJSONAppend(_ path: String, objects: Int) throws -> (Double, Double) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw StoreBenchmarkError("cannot create \(path)") }
    defer { close(fd) }
    let encoder = JSONEncoder()
    let sensor = WeatherSensorBSON()
    let start = storeBenchNow()
    for _ in 0..<objects {
        sensor.next()
        let v = sensor.values
        var data = try encoder.encode(
            JSONWeatherSensor(
                _id: sensor.hex, deviceId: v.device, temperatureInFahrenheit: v.temperature,
                barometricPressureInHg: v.pressure, windSpeedInMph: v.wind))
        data.append(0x0A)
        _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
    let seconds = Double(storeBenchNow() - start) / 1e9
    var info = stat()
    fstat(fd, &info)
    return (Double(objects) / seconds, Double(info.st_size) / Double(objects))
}

private func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// Median nanoseconds of a one-object commit.
private func measureCommitLatency(
    _ path: String, sensor: WeatherSensorBSON, durability: SegmentStore.Durability, iterations: Int, rounds: Int,
    encryptionKey: Data? = nil
) throws -> Double {
    var configuration = SegmentStore.Configuration(directory: path)
    configuration.encryptionKey = encryptionKey
    configuration.durability = durability
    configuration.maxPendingBytes = 8 << 30
    let store = try SegmentStore.open(configuration)
    defer {
        try? store.close()
        try? FileManager.default.removeItem(atPath: path)
    }
    func once() throws {
        sensor.next()
        try store.commit { tx in try tx.append(collection: "WeatherSensor", document: sensor.bytes) }
    }
    for _ in 0..<max(1, iterations / 4) { try once() }
    var perCall: [Double] = []
    for _ in 0..<rounds {
        let start = storeBenchNow()
        for _ in 0..<iterations { try once() }
        perCall.append(Double(storeBenchNow() - start) / Double(iterations))
    }
    return median(perCall)
}

/// Median nanoseconds of a bare `write` + `fdatasync` of `bytes` bytes (the
/// floor for a durable commit on this disk).
private func measureBareWriteSync(_ path: String, bytes: Int, iterations: Int) throws -> Double {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw StoreBenchmarkError("cannot create \(path)") }
    defer {
        close(fd)
        unlink(path)
    }
    let buffer = [UInt8](repeating: 0x52, count: bytes)
    var perCall: [Double] = []
    for _ in 0..<5 {
        let start = storeBenchNow()
        for _ in 0..<iterations {
            _ = buffer.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fdatasync(fd)
        }
        perCall.append(Double(storeBenchNow() - start) / Double(iterations))
    }
    return median(perCall)
}

struct StoreBenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
