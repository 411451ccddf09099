import Foundation
import Testing
import IngestTestSupport

/// The WeatherStation binary against a real ingest-server.
@Suite struct WeatherStationTests {
    @Test func streamsReadingsThatLandExactlyOnce() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let result = try runProcess(
            try builtExecutable("WeatherStation"),
            [
                "--app-id", server.appId, "--base-url", server.baseURL, "--rate", "200", "--count", "40",
                "--device-id", "WX-TEST-1", "--data-dir", directory.path + "/station",
            ], in: directory.path)
        #expect(result.status == 0, "\(result.output) \(result.errorOutput)")
        #expect(result.output.contains("station WX-TEST-1"))
        #expect(result.output.contains("wrote 40 readings"))
        #expect(result.output.contains("summary: device WX-TEST-1, 40 readings written, 40 uploaded"))
        #expect(try server.query("SELECT count(*) FROM WeatherSensor") == ["40"])
        #expect(try server.query("SELECT count(DISTINCT _id) FROM WeatherSensor") == ["40"])
        #expect(try server.query("SELECT DISTINCT deviceId FROM WeatherSensor") == ["WX-TEST-1"])
        #expect(
            try server.query(
                "SELECT count(*) FROM WeatherSensor WHERE temperatureInFahrenheit BETWEEN -20 AND 110 AND barometricPressureInHg BETWEEN 28 AND 31 AND windSpeedInMph BETWEEN 0 AND 60"
            ) == ["40"])

        // A second run adds its readings; nothing is uploaded twice.
        let again = try runProcess(
            try builtExecutable("WeatherStation"),
            [
                "--app-id", server.appId, "--base-url", server.baseURL, "--rate", "50", "--duration", "0.5", "--quiet",
                "--device-id", "WX-TEST-1", "--data-dir", directory.path + "/station",
            ], in: directory.path)
        #expect(again.status == 0, "\(again.output) \(again.errorOutput)")
        let written = again.output.components(separatedBy: "wrote ").dropFirst().first?.split(separator: " ").first.flatMap { Int($0) }
        #expect(written == 25)
        #expect(try server.query("SELECT count(*) FROM WeatherSensor") == ["\(40 + (written ?? -1))"])
    }

    @Test func usageErrorsExitTwoAndUnreachableServersExitOne() throws {
        let directory = try TemporaryDirectory("samples")
        let station = try builtExecutable("WeatherStation")
        let unknown = try runProcess(station, ["--app-id", "x", "--bogus"], in: directory.path)
        #expect(unknown.status == 2)
        #expect(unknown.errorOutput.contains("Unknown option '--bogus'"))  // swift-argument-parser's message
        let badRate = try runProcess(station, ["--app-id", "x", "--rate", "fast"], in: directory.path)
        #expect(badRate.status == 2)
        #expect(badRate.errorOutput.contains("--rate needs a positive number"))
        let help = try runProcess(station, ["--help"], in: directory.path)
        #expect(help.status == 0)
        #expect(help.output.contains("USAGE: WeatherStation"))  // the generated help
        // Port 1 on 127.0.0.1: nothing listens there. A station that starts
        // offline records all the same (issue 18): its readings stay on disk,
        // and it exits 1 because they are not uploaded within --upload-timeout.
        let unreachable = try runProcess(
            station,
            [
                "--app-id", "dev-none", "--base-url", "http://127.0.0.1:1", "--count", "1",
                "--upload-timeout", "1", "--data-dir", directory.path + "/station",
            ],
            in: directory.path)
        #expect(unreachable.status == 1)
        #expect(unreachable.errorOutput.contains("not all readings were uploaded"), "\(unreachable.errorOutput)")
        #expect(unreachable.output.contains("wrote 1 readings"), "\(unreachable.output)")
    }
}
