import ArgumentParser
import Foundation
import IngestCommandLine

/// The command line of `WeatherStation` (swift-argument-parser: `--help` is
/// generated, usage errors exit 2).
struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "WeatherStation",
        abstract: "Streams simulated weather readings (the seed's WeatherSensor) to an ingest server.",
        discussion: """
            Waits until the server has acknowledged every reading, prints a summary and exits 0.
            Readings not uploaded stay in --data-dir and go out on the next run.

            Exit status: 0 all readings uploaded, 1 failure (login, write, upload timeout), 2 usage error.
            """)

    /// `--app-id` (or `$DATAINGEST_APP_ID`) and `--base-url` (default:
    /// `$DATAINGEST_BASE_URL` or `http://127.0.0.1:9090`).
    @OptionGroup var server: ServerOptions

    /// Readings per second. Default 10.
    @Option(
        help: ArgumentHelp("Readings per second (fractions allowed; default 10).", valueName: "n"),
        transform: ArgumentParsing.positiveNumber("--rate"))
    var rate: Double = 10

    /// Stop after this many readings.
    @Option(
        help: ArgumentHelp("Stop after this many readings.", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--count"))
    var count: Int?

    /// Stop after this many seconds. Default: 10 s when neither `--count`
    /// nor `--duration` is given (set by ``validate()``).
    @Option(
        help: ArgumentHelp("Stop after this many seconds (default 10 when no --count).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--duration"))
    var duration: Double?

    /// Where the station keeps its settings realm and its DataIngest
    /// metadata (users, tokens, pending segments). Default `./weather-station-data`.
    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Settings realm and pending data (default ./weather-station-data).", valueName: "dir"))
    var dataDirectoryOption: String?

    /// The device id; default: the one chosen on the first run.
    @Option(
        name: .customLong("device-id"),
        help: ArgumentHelp(
            "The device id (default: chosen on the first run and kept).", valueName: "id"))
    var deviceId: String?

    /// Seconds to wait for the upload at the end. Default 60.
    @Option(
        name: .customLong("upload-timeout"),
        help: ArgumentHelp(
            "How long to wait for the upload at the end, in seconds (default 60).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--upload-timeout"))
    var uploadTimeout: Double = 60

    /// No progress lines.
    @Flag(help: "No progress lines.")
    var quiet = false

    /// The app id (validated: never empty).
    var appId: String? { server.appId }
    /// The server; `nil` for App.Configuration's default.
    var baseURL: URL? { server.baseURL }
    var dataDirectory: String { dataDirectoryOption ?? FileManager.default.currentDirectoryPath + "/weather-station-data" }
    /// Print a progress line every second (`--quiet` turns it off).
    var progress: Bool { !quiet }

    mutating func validate() throws {
        if count == nil && duration == nil { duration = 10 }
    }
}
