/// One simulated reading.
struct Reading {
    var deviceId: String
    var temperatureInFahrenheit: Float
    var barometricPressureInHg: Float
    var windSpeedInMph: Int
}

/// Simulated weather: small random walks around plausible values.
struct Weather {
    let deviceId: String
    private var temperature: Float = Float.random(in: 55...75)
    private var pressure: Float = Float.random(in: 29.6...30.2)
    private var wind: Double = Double.random(in: 0...10)

    init(deviceId: String) { self.deviceId = deviceId }

    /// The next reading.
    mutating func next() -> Reading {
        temperature = min(110, max(-20, temperature + Float.random(in: -0.3...0.3)))
        pressure = min(31, max(28, pressure + Float.random(in: -0.01...0.01)))
        wind = min(60, max(0, wind + Double.random(in: -1...1)))
        return Reading(
            deviceId: deviceId,
            temperatureInFahrenheit: (temperature * 10).rounded() / 10,
            barometricPressureInHg: (pressure * 100).rounded() / 100,
            windSpeedInMph: Int(wind.rounded()))
    }
}
