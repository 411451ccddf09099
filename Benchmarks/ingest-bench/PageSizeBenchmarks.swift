import Foundation
import IngestCore

// The SQLite sink's page size (issue 19): direct inserts into the sink's
// WeatherSensor table (``SinkShapedInserter``: WITHOUT ROWID, 12-byte blob
// `_id`, WAL, synchronous=FULL) in a database made with 16 KiB pages, the
// sink's default, against the same inserts with SQLite's default of 4 KiB,
// in turns (the 4 KiB run first in odd rounds). No target: the figures show
// what the default gains where `_id`s are ObjectIds (each insert at the end
// of the B-tree) and what it costs where they are random (each insert into
// the middle, every changed page written whole).
//
// INGEST_BENCH_PAGESIZE_OBJECTS (default 200,000) rows per case,
// INGEST_BENCH_PAGESIZE_ROUNDS (default 2) rounds in turns.

func pageSizeBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let count = max(1_000, Int(environment["INGEST_BENCH_PAGESIZE_OBJECTS"] ?? "") ?? 200_000)
    let rounds = max(1, Int(environment["INGEST_BENCH_PAGESIZE_ROUNDS"] ?? "") ?? 2)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-pagesize-\(getpid())").path
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    func objects(randomKeys: Bool) -> [ServerBenchSegments.Object] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { index in
            let id = randomKeys ? (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) } : ObjectId.generate().bytes
            return ServerBenchSegments.Object(
                id: id, deviceId: "device-\(index % 100)", temperature: 70.5 + Double(index % 30), pressure: 29.9,
                wind: Int64(index % 40))
        }
    }
    let ordered = objects(randomKeys: false)
    let random = objects(randomKeys: true)
    let cases: [(name: String, objects: [ServerBenchSegments.Object], batch: Int)] = [
        ("ObjectId keys, txn of 1,000", ordered, 1_000),
        ("ObjectId keys, txn of 50,000", ordered, 50_000),
        ("random 12-byte keys, txn of 1,000", random, 1_000),
    ]
    var figures: [Figure] = []
    for (number, testCase) in cases.enumerated() {
        var seconds = [4_096: 0.0, 16_384: 0.0]
        for round in 0..<rounds {
            for pageSize in round % 2 == 0 ? [4_096, 16_384] : [16_384, 4_096] {
                let inserter = try SinkShapedInserter(path: directory + "/case\(number)-\(round)-\(pageSize).sqlite", pageSize: pageSize)
                let start = nowNanoseconds()
                try inserter.insert(testCase.objects[...], batch: testCase.batch)
                seconds[pageSize, default: 0] += Double(nowNanoseconds() - start) / 1e9
                inserter.close()
            }
        }
        let rows = Double(count * rounds)
        figures.append(
            Figure(
                group: "pagesize", name: "direct inserts, sink's table, 16 KiB pages, \(testCase.name), \(count) rows",
                value: rows / seconds[16_384]!, unit: "objects/s",
                baseline: ("the same with 4 KiB pages, in turns", rows / seconds[4_096]!), target: nil))
    }
    return figures
}
