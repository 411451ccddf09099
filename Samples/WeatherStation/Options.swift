#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The command line of `WeatherStation`.
struct Options {
    /// The app id the development server printed (`--app-id`, or `$DATAINGEST_APP_ID`).
    var appId: String?
    /// The server (`--base-url`); default: `$DATAINGEST_BASE_URL` or `http://127.0.0.1:9090`.
    var baseURL: URL?
    /// Readings per second (`--rate`). Default 10.
    var rate: Double = 10
    /// Stop after this many readings (`--count`).
    var count: Int?
    /// Stop after this many seconds (`--duration`). Default: 10 s when
    /// neither `--count` nor `--duration` is given.
    var duration: Double?
    /// Where the station keeps its settings realm and its DataIngest
    /// metadata (users, tokens, pending segments) (`--data-dir`). Default
    /// `./weather-station-data`.
    var dataDirectory = FileManager.default.currentDirectoryPath + "/weather-station-data"
    /// The device id (`--device-id`); default: the one chosen on the first run.
    var deviceId: String?
    /// Seconds to wait for the upload at the end (`--upload-timeout`). Default 60.
    var uploadTimeout: Double = 60
    /// Print a progress line every second (`--quiet` turns it off).
    var progress = true

    static let usage = """
        usage: WeatherStation [--app-id ID] [--base-url URL] [--rate N] [--count N | --duration S]
                              [--data-dir DIR] [--device-id ID] [--upload-timeout S] [--quiet]

        Streams simulated weather readings (the seed's WeatherSensor) to an ingest server,
        waits until the server has acknowledged all of them, prints a summary and exits 0.

          --app-id ID          the app id (default: $DATAINGEST_APP_ID)
          --base-url URL       the server (default: $DATAINGEST_BASE_URL or http://127.0.0.1:9090)
          --rate N             readings per second (default 10; fractions allowed)
          --count N            stop after N readings
          --duration S         stop after S seconds (default 10 when no --count)
          --data-dir DIR       settings realm and pending data (default ./weather-station-data)
          --device-id ID       the device id (default: chosen on the first run and kept)
          --upload-timeout S   how long to wait for the upload at the end (default 60)
          --quiet              no progress lines
          -h, --help           this text

        Exit status: 0 all readings uploaded, 1 failure (login, write, upload timeout), 2 usage error.
        """

    /// A usage error: the message names the flag and what is expected.
    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses `arguments` (without the program name). Returns nil for `--help`.
    static func parse(_ arguments: [String], environment: [String: String]) throws -> Options? {
        var options = Options()
        options.appId = environment["DATAINGEST_APP_ID"]
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(description: "\(flag) needs a value") }
            return arguments[index]
        }
        func number(_ flag: String) throws -> Double {
            let text = try value(flag)
            guard let number = Double(text), number.isFinite, number > 0 else {
                throw UsageError(description: "\(flag) needs a positive number, not '\(text)'")
            }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help": return nil
            case "--app-id": options.appId = try value(argument)
            case "--base-url":
                let text = try value(argument)
                guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                    throw UsageError(description: "--base-url needs an http(s) URL, not '\(text)'")
                }
                options.baseURL = url
            case "--rate": options.rate = try number(argument)
            case "--count":
                let text = try value(argument)
                guard let count = Int(text), count > 0 else {
                    throw UsageError(description: "--count needs a positive whole number, not '\(text)'")
                }
                options.count = count
            case "--duration": options.duration = try number(argument)
            case "--data-dir": options.dataDirectory = try value(argument)
            case "--device-id": options.deviceId = try value(argument)
            case "--upload-timeout": options.uploadTimeout = try number(argument)
            case "--quiet": options.progress = false
            default: throw UsageError(description: "unknown argument '\(argument)'")
            }
            index += 1
        }
        guard let appId = options.appId, !appId.isEmpty else {
            throw UsageError(description: "no app id: pass --app-id (ingest-server prints it) or set DATAINGEST_APP_ID")
        }
        if options.count == nil && options.duration == nil { options.duration = 10 }
        return options
    }
}
