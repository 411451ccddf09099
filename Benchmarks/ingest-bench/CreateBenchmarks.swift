import DataIngest
import Foundation
import IngestSupport

/// The seed's asymmetric type.
private final class BenchWeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int

    override class func className() -> String { "WeatherSensor" }
}

/// The JSON baseline's equivalent struct.
private struct BenchWeatherReading: Codable {
    var _id: String
    var deviceId: String
    var temperatureInFahrenheit: Float
    var barometricPressureInHg: Float
    var windSpeedInMph: Int
}

/// Counts what is committed and drops it: storage is excluded from the figure.
private final class DiscardingSink: TransactionSink {
    private let counts = LockedBox((records: 0, bytes: 0))
    func commit(_ transaction: EncodedTransaction) throws {
        counts.withLock {
            $0.records += transaction.records.count; $0.bytes += transaction.bytes.count
        }
    }
    var records: Int { counts.withLock { $0.records } }
}

/// `realm.create` for the seed's WeatherSensor in write transactions of
/// 1,000 objects, dictionary form and instance form (schema check and BSON
/// encoding; the sink discards), next to JSONEncoder encoding an equivalent
/// struct per object in the same run.
func createBenchmarks() throws -> [Figure] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let sink = DiscardingSink()
    let configuration = Realm.Configuration(
        fileURL: directory.appendingPathComponent("bench.realm"), objectTypes: [BenchWeatherSensor.self],
        syncConfiguration: SyncConfiguration(identifier: "bench", transactionSink: sink))
    let realm = try Realm(configuration: configuration)
    let batch = 1_000

    let ids = (0..<batch).map { _ in ObjectId.generate() }
    let dictionaries: [[String: Any]] = ids.map { id in
        [
            "_id": id, "deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
        ]
    }
    let instances: [BenchWeatherSensor] = ids.map { id in
        let sensor = BenchWeatherSensor()
        sensor._id = id
        sensor.deviceId = "WX1278UIT"
        sensor.temperatureInFahrenheit = 66.7
        sensor.barometricPressureInHg = 29.65
        sensor.windSpeedInMph = 2
        return sensor
    }
    let readings = ids.map {
        BenchWeatherReading(
            _id: $0.hex, deviceId: "WX1278UIT", temperatureInFahrenheit: 66.7,
            barometricPressureInHg: 29.65, windSpeedInMph: 2)
    }

    let dictionaryForm =
        try medianNanoseconds(iterations: 20, rounds: 9) {
            try realm.write {
                for value in dictionaries { realm.create(BenchWeatherSensor.self, value: value) }
            }
        } / Double(batch)
    let instanceForm =
        try medianNanoseconds(iterations: 20, rounds: 9) {
            try realm.write {
                for value in instances { realm.create(BenchWeatherSensor.self, value: value) }
            }
        } / Double(batch)
    let encoder = JSONEncoder()
    let json =
        try medianNanoseconds(iterations: 5, rounds: 9) {
            for reading in readings { blackHole(try encoder.encode(reading)) }
        } / Double(batch)
    guard sink.records > 0 else { throw BenchmarkError("nothing was committed") }

    return [
        Figure(
            group: "create", name: "create WeatherSensor, dictionary form (txn of 1,000)",
            value: dictionaryForm / 1000, unit: "µs/object", baseline: ("JSONEncoder", json / 1000), target: .atMost(1)),
        Figure(
            group: "create", name: "create WeatherSensor, instance form (txn of 1,000)",
            value: instanceForm / 1000, unit: "µs/object", baseline: ("JSONEncoder", json / 1000), target: .atMost(1)),
    ]
}
