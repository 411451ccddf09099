import Foundation
import IngestCore

/// The seed's weather reading as a plain Codable struct: the JSON baselines
/// encode and decode this.
private struct WeatherReading: Codable {
    var _id: String
    var deviceId: String
    var temperatureInFahrenheit: Double
    var barometricPressureInHg: Double
    var windSpeedInMph: Int
}

/// BSON encode and decode+validate of a 5-field document (ObjectId, string,
/// two floating-point numbers, an integer), each next to Foundation's
/// JSONEncoder/JSONDecoder on the same data, in the same run.
func bsonBenchmarks() throws -> [Figure] {
    let id = ObjectId.generate()
    let document: BSONDocument = [
        "_id": .objectId(id),
        "deviceId": "WX1278UIT",
        "temperatureInFahrenheit": .double(66.7),
        "barometricPressureInHg": .double(29.65),
        "windSpeedInMph": .int64(2),
    ]
    let reading = WeatherReading(
        _id: id.hex, deviceId: "WX1278UIT", temperatureInFahrenheit: 66.7,
        barometricPressureInHg: 29.65, windSpeedInMph: 2)

    // Encoding into a reused buffer.
    var buffer: [UInt8] = []
    buffer.reserveCapacity(256)
    let bsonEncode = medianNanoseconds(iterations: 200_000) {
        buffer.removeAll(keepingCapacity: true)
        document.appendBSON(to: &buffer)
        blackHole(buffer.count)
    }
    let jsonEncoder = JSONEncoder()
    let jsonEncode = try medianNanoseconds(iterations: 20_000) {
        blackHole(try jsonEncoder.encode(reading))
    }

    // Decoding with full validation.
    let bsonBytes = document.bsonBytes()
    let bsonDecode = try medianNanoseconds(iterations: 200_000) {
        blackHole(try BSONDocument(bson: bsonBytes))
    }
    let jsonBytes = try jsonEncoder.encode(reading)
    let jsonDecoder = JSONDecoder()
    let jsonDecode = try medianNanoseconds(iterations: 20_000) {
        blackHole(try jsonDecoder.decode(WeatherReading.self, from: jsonBytes))
    }
    // The document must survive the trip, or the figures mean nothing.
    guard try BSONDocument(bson: bsonBytes) == document else {
        throw BenchmarkError("BSON round trip changed the document")
    }

    return [
        Figure(
            group: "bson", name: "encode 5-field document (reused buffer)",
            value: bsonEncode, unit: "ns/doc",
            baseline: ("JSONEncoder", jsonEncode), target: .ratioAtLeast(10)),
        Figure(
            group: "bson", name: "encode 5-field document (absolute)",
            value: bsonEncode, unit: "ns/doc", target: .atMost(150)),
        Figure(
            group: "bson", name: "decode+validate 5-field document",
            value: bsonDecode, unit: "ns/doc",
            baseline: ("JSONDecoder", jsonDecode), target: .ratioAtLeast(5)),
        Figure(
            group: "bson", name: "decode+validate 5-field document (absolute)",
            value: bsonDecode, unit: "ns/doc", target: .atMost(250)),
    ]
}

/// A benchmark that could not produce a meaningful figure.
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
