import ArgumentParser
import Foundation

/// Value parsers for options whose usage errors name the option and what it
/// needs (swift-argument-parser prints them after "The value 'x' is invalid
/// for '--flag <n>': ").
///
/// ```swift
/// @Option(name: .customLong("rate"), transform: ArgumentParsing.positiveNumber("--rate"))
/// var rate: Double = 10
/// ```
package enum ArgumentParsing {
    /// A finite number above zero (fractions allowed): "--rate needs a positive number, not 'fast'".
    package static func positiveNumber(_ flag: String) -> @Sendable (String) throws -> Double {
        { text in
            guard let number = Double(text), number.isFinite, number > 0 else {
                throw ValidationError("\(flag) needs a positive number, not '\(text)'")
            }
            return number
        }
    }

    /// A whole number above zero: "--count needs a positive whole number, not 'x'".
    package static func positiveInteger(_ flag: String) -> @Sendable (String) throws -> Int {
        { text in
            guard let number = Int(text), number > 0 else {
                throw ValidationError("\(flag) needs a positive whole number, not '\(text)'")
            }
            return number
        }
    }

    /// An `http` or `https` URL: "--base-url needs an http(s) URL, not 'x'".
    package static func httpURL(_ flag: String) -> @Sendable (String) throws -> URL {
        { text in
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                throw ValidationError("\(flag) needs an http(s) URL, not '\(text)'")
            }
            return url
        }
    }
}

/// The options every client of an ingest server takes: which app, which
/// server. `--app-id` falls back to `$DATAINGEST_APP_ID` (and is required
/// one way or the other: a usage error without it), `--base-url` to
/// `App.Configuration`'s default (`$DATAINGEST_BASE_URL`, else
/// `http://127.0.0.1:9090`).
///
/// ```swift
/// struct Options: ParsableCommand {
///     @OptionGroup var server: ServerOptions
///     …
/// }
/// let app = App(id: options.server.appId, configuration: App.Configuration(baseURL: options.server.baseURL))
/// ```
package struct ServerOptions: ParsableArguments {
    @Option(
        name: .customLong("app-id"),
        help: ArgumentHelp(
            "The app id (ingest-server prints it; default: $DATAINGEST_APP_ID).", valueName: "id"))
    var appIdOption: String?

    @Option(
        name: .customLong("base-url"),
        help: ArgumentHelp(
            "The ingest server (default: $DATAINGEST_BASE_URL or http://127.0.0.1:9090).", valueName: "url"),
        transform: ArgumentParsing.httpURL("--base-url"))
    package var baseURL: URL?

    package init() {}

    /// `--app-id`, else `$DATAINGEST_APP_ID` (never empty once validated).
    package var appId: String {
        appIdOption ?? ProcessInfo.processInfo.environment["DATAINGEST_APP_ID"] ?? ""
    }

    package func validate() throws {
        guard !appId.isEmpty else {
            throw ValidationError("no app id: pass --app-id (ingest-server prints it) or set DATAINGEST_APP_ID")
        }
    }
}
