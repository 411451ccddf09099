import DataIngest
import Testing
import IngestTestSupport

// The seed page's code, unchanged but for the parts of App/User/login that
// belong to the sync issue: the class, and the write in useRealm.

class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

@MainActor
func useRealm(_ asymmetricRealm: Realm) async {
    try! asymmetricRealm.write {
        asymmetricRealm.create(
            WeatherSensor.self,
            value: [
                "_id": ObjectId.generate(),
                "deviceId": "WX1278UIT",
                "temperatureInFahrenheit": 66.7,
                "barometricPressureInHg": 29.65,
                "windSpeedInMph": 2,
            ])
    }
}

@Suite struct SeedCodeTests {
    @MainActor
    @Test func theSeedsWriteStreamsOneWeatherSensor() async throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        // As the seed: a flexible sync configuration listing the asymmetric type.
        var asymmetricConfig = syncedConfiguration(nil, in: directory, sink: sink)
        asymmetricConfig.objectTypes = [WeatherSensor.self]
        let asymmetricRealm = try await Realm(configuration: asymmetricConfig)
        await useRealm(asymmetricRealm)

        let documents = try sink.documents()
        #expect(documents.count == 1)
        #expect(documents.first?.collection == "WeatherSensor")
        let document = try #require(documents.first?.document)
        #expect(document.keys == ["_id", "deviceId", "temperatureInFahrenheit", "barometricPressureInHg", "windSpeedInMph"])
        #expect(document["deviceId"] == .string("WX1278UIT"))
        // Float 66.7 is stored as the double holding exactly Float(66.7).
        #expect(document["temperatureInFahrenheit"] == .double(Double(Float(66.7))))
        #expect(document["barometricPressureInHg"] == .double(Double(Float(29.65))))
        #expect(document["windSpeedInMph"] == .int64(2))
        guard case .objectId = document["_id"] else { Issue.record("_id is not an ObjectId"); return }
        // What the client writes, the server's validator accepts.
        #expect(asymmetricRealm.schema.validate(document, against: "WeatherSensor").isEmpty)
    }
}
