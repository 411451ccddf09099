#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport

/// The `ingest-server` command line: runs the server from a configuration
/// file, or with none as the development server, and the `apikey`
/// administration subcommand. `main.swift` only calls ``main(_:)``.
///
/// ```swift
/// exit(ServerCommand.main(Array(CommandLine.arguments.dropFirst())))
/// ```
///
/// The first line on standard output is `listening on <url>` (tools and
/// tests read the port from it) and the last, after a graceful shutdown, is
/// `stopped`. Everything else (the development app id, the endpoint URLs,
/// diagnostics) goes to standard error.
package enum ServerCommand {
    /// The `--help` text.
    package static let usage = """
        usage: ingest-server [--config FILE] [--data-dir DIR] [options]
               ingest-server apikey create|list|revoke --app ID [--name NAME] [--config FILE] [--data-dir DIR]

        Without --config, runs the development server: one app (its id is kept in
        DIR/development-app-id), anonymous login, development mode (new collections
        and fields are accepted), SQLite under DIR (default ./ingest-data).

          --config FILE               JSON configuration (see Docs/Server.md)
          --data-dir DIR              state and SQLite directory (overrides stateDirectory)
          --host ADDRESS              bind address (default 127.0.0.1)
          --port N                    TCP port, 0 for an ephemeral one (default 9090)
          --workers N                 handler threads (default 4)
          --max-connections N         open connections before 503 (default 1024)
          --max-header-bytes N        request line + headers limit, 431 above (default 16384)
          --max-body-bytes N          request body limit, 413 above (default 67108864)
          --max-inflated-bytes N      inflated upload limit, 413 above (default 268435456)
          --max-inflate-ratio N       inflated/compressed ratio limit, 413 above (default 200)
          --max-concurrent-uploads N  uploads processed at once, 429 above (default 16)
          --synchronous MODE          SQLite sink synchronous pragma: FULL, NORMAL or EXTRA (default FULL)
          --sink-busy-timeout MS      wait for a locked SQLite sink before 503 (default 5000)
          --header-timeout SECONDS    time to send a request head (default 10)
          --body-timeout SECONDS      max stall while sending a body (default 30)
          --keep-alive-timeout SECONDS  idle time between requests (default 30)
          --write-timeout SECONDS     max stall while the client reads a response (default 30)
          --shutdown-grace SECONDS    time for in-flight requests on SIGTERM/SIGINT (default 10)
          --enable-test-routes        serve the /_test/ diagnostic routes (never in production)
          --help                      print this help

        """

    struct UsageError: Error {
        var message: String
    }

    /// Runs the command with `arguments` (without the program name); returns
    /// the exit status: 0 success, 1 runtime failure, 2 usage error.
    package static func main(_ arguments: [String]) -> Int32 {
        // Before any database is opened, while the process has one thread:
        // without memory statistics SQLite allocates without taking its
        // global mutex (the server reads none of those statistics).
        SQLiteConnection.disableMemoryStatistics()
        do {
            if arguments.first == "apikey" { return try apiKey(Array(arguments.dropFirst())) }
            return try serve(arguments)
        } catch let error as UsageError {
            emit("ingest-server: \(error.message)\n\(usage)", to: 2)
            return 2
        } catch {
            emit("ingest-server: \(error)\n", to: 2)
            return 1
        }
    }

    // MARK: - Serving

    static func serve(_ arguments: [String]) throws -> Int32 {
        var configPath: String?
        var dataDirectory: String?
        var testRoutes = false
        var options = IngestService.Options()
        var httpOverrides: [(inout HTTPServerConfiguration) -> Void] = []
        var limitOverrides: [(inout ServerConfiguration.Limits) -> Void] = []
        var port: Int?
        var host: String?
        var parser = ArgumentParser(arguments)
        while let argument = parser.next() {
            switch argument {
            case "--config": configPath = try parser.value(argument)
            case "--data-dir": dataDirectory = try parser.value(argument)
            case "--host": host = try parser.value(argument)
            case "--port": port = try parser.integer(argument, 0...65535)
            case "--workers":
                let n = try parser.integer(argument, 1...256)
                httpOverrides.append { $0.workerThreads = n }
            case "--max-connections":
                let n = try parser.integer(argument, 1...1_000_000)
                httpOverrides.append { $0.maxConnections = n }
            case "--max-header-bytes":
                let n = try parser.integer(argument, 256...(1 << 24))
                httpOverrides.append { $0.maxHeaderBytes = n }
            case "--max-body-bytes":
                let n = try parser.integer(argument, 0...(1 << 40))
                httpOverrides.append { $0.maxBodyBytes = n }
            case "--max-inflated-bytes":
                let n = try parser.integer(argument, 1...(1 << 40))
                limitOverrides.append { $0.maxInflatedBytes = n }
            case "--max-inflate-ratio":
                let n = try parser.integer(argument, 1...1_000_000)
                limitOverrides.append { $0.maxInflateRatio = n }
            case "--max-concurrent-uploads": options.maxConcurrentUploads = try parser.integer(argument, 1...10_000)
            case "--synchronous":
                let mode = try parser.value(argument).uppercased()
                guard ["FULL", "NORMAL", "EXTRA"].contains(mode) else {
                    throw UsageError(message: "--synchronous must be FULL, NORMAL or EXTRA, not \(mode)")
                }
                options.sqlite.synchronous = mode
            case "--sink-busy-timeout":
                options.sqlite.busyTimeoutMilliseconds = Int32(try parser.integer(argument, 0...600_000))
            case "--header-timeout":
                let s = try parser.seconds(argument)
                httpOverrides.append { $0.headerTimeout = s }
            case "--body-timeout":
                let s = try parser.seconds(argument)
                httpOverrides.append { $0.bodyIdleTimeout = s }
            case "--keep-alive-timeout":
                let s = try parser.seconds(argument)
                httpOverrides.append { $0.keepAliveTimeout = s }
            case "--write-timeout":
                let s = try parser.seconds(argument)
                httpOverrides.append { $0.writeTimeout = s }
            case "--shutdown-grace":
                let s = try parser.seconds(argument)
                httpOverrides.append { $0.shutdownGracePeriod = s }
            case "--enable-test-routes": testRoutes = true
            case "--help", "-h":
                emit(usage)
                return 0
            default: throw UsageError(message: "unknown option \(argument)")
            }
        }

        var configuration = try loadConfiguration(configPath: configPath, dataDirectory: dataDirectory)
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        for override in limitOverrides { override(&configuration.limits) }
        options.log = { message in emit("ingest-server: \(message)\n", to: 2) }

        let service = try IngestService(configuration: configuration, options: options)
        defer { service.close() }
        var router = HTTPRouter()
        service.addRoutes(to: &router)
        if testRoutes { router.addDiagnosticRoutes() }
        var http = service.httpServerConfiguration
        for override in httpOverrides { override(&http) }
        http.handleSignals = true
        http.logHandler = { message in emit("ingest-server: \(message)\n", to: 2) }

        let server = HTTPServer(configuration: http, router: router)
        try server.start()
        emit("listening on \(server.url)\n")
        emit(banner(service: service, url: server.url, development: configPath == nil), to: 2)
        try server.run()
        emit("stopped\n")
        return 0
    }

    static func loadConfiguration(configPath: String?, dataDirectory: String?) throws -> ServerConfiguration {
        if let configPath {
            var configuration = try ServerConfiguration(contentsOfFile: configPath)
            if let dataDirectory { configuration.stateDirectory = dataDirectory }
            return configuration
        }
        return try ServerConfiguration.development(stateDirectory: dataDirectory ?? "./ingest-data")
    }

    static func banner(service: IngestService, url: String, development: Bool) -> String {
        var out = ""
        if development {
            out += "development server: data in \(service.configuration.stateDirectory) (not for production)\n"
        }
        for app in service.apps {
            let providers = app.configuration.auth.enabledProviders.map(\.rawValue).joined(separator: ", ")
            out += "app \(app.id)\(app.configuration.developmentMode ? " (development mode)" : ""): sink \(app.sink.description)\n"
            out += "  login:  POST \(url)/api/client/v2.0/app/\(app.id)/auth/providers/{\(providers)}/login\n"
            out += "  upload: POST \(url)/api/client/v2.0/app/\(app.id)/ingest\n"
        }
        out += "status: \(url)/  metrics: \(url)/metrics  health: \(url)/healthz\n"
        return out
    }

    // MARK: - API keys

    /// `ingest-server apikey create|list|revoke …`: auth's ``APIKeyCommand``.
    static func apiKey(_ arguments: [String]) throws -> Int32 {
        let result = APIKeyCommand.run(arguments: arguments)
        emit(result.output)
        emit(result.errorOutput, to: 2)
        return result.status
    }
}

/// Pops arguments and checks flag values.
struct ArgumentParser {
    var remaining: ArraySlice<String>

    init(_ arguments: [String]) { remaining = arguments[...] }

    mutating func next() -> String? { remaining.popFirst() }

    mutating func value(_ flag: String) throws -> String {
        guard let value = remaining.popFirst() else { throw ServerCommand.UsageError(message: "\(flag) needs a value") }
        return value
    }

    mutating func integer(_ flag: String, _ range: ClosedRange<Int>) throws -> Int {
        let text = try value(flag)
        guard let n = Int(text), range.contains(n) else {
            throw ServerCommand.UsageError(message: "\(flag) must be an integer in \(range), not \(text)")
        }
        return n
    }

    mutating func seconds(_ flag: String) throws -> Double {
        let text = try value(flag)
        guard let s = Double(text), s > 0, s.isFinite else {
            throw ServerCommand.UsageError(message: "\(flag) must be a positive number of seconds, not \(text)")
        }
        return s
    }
}

/// Writes `text` to a file descriptor unbuffered, so tests and supervisors
/// reading a pipe see each line at once.
func emit(_ text: String, to fd: Int32 = 1) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
    }
}
