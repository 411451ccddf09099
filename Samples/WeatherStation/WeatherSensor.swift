import DataIngest

// The seed page's class, unchanged: an upload-only reading. Objects of it are
// written in a synced realm, kept on disk until the server has them, then
// removed; they can never be read back.
class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}
