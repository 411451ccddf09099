#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import IngestSupport
import Foundation
import IngestCore
import IngestHTTP
import IngestServer
import Logging

/// The serving flags: each overrides the configuration file's value (or
/// the development server's default) when given.
struct ServeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Bind address (default 127.0.0.1; 0.0.0.0 for remote clients).", valueName: "address"))
    var host: String?

    @Option(
        help: ArgumentHelp("TCP port, 0 for an ephemeral one (default 9090).", valueName: "n"),
        transform: { try integer($0, in: 0...65_535) })
    var port: Int?

    @Option(
        help: ArgumentHelp("Threads that run handlers (default 4).", valueName: "n"),
        transform: { try integer($0, in: 1...256) })
    var workers: Int?

    @Option(
        help: ArgumentHelp("Open connections before 503 (default 1024).", valueName: "n"),
        transform: { try integer($0, in: 1...1_000_000) })
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp("Request line + headers limit, 431 above (default 16384).", valueName: "n"),
        transform: { try integer($0, in: 256...(1 << 24)) })
    var maxHeaderBytes: Int?

    @Option(
        help: ArgumentHelp("Request body limit, 413 above (default 67108864).", valueName: "n"),
        transform: { try integer($0, in: 0...(1 << 40)) })
    var maxBodyBytes: Int?

    @Option(
        help: ArgumentHelp("Inflated upload limit, 413 above (default 268435456).", valueName: "n"),
        transform: { try integer($0, in: 1...(1 << 40)) })
    var maxInflatedBytes: Int?

    @Option(
        help: ArgumentHelp("Inflated/compressed ratio limit, 413 above (default 200).", valueName: "n"),
        transform: { try integer($0, in: 1...1_000_000) })
    var maxInflateRatio: Int?

    @Option(
        help: ArgumentHelp("Uploads processed at once, 429 above (default 16).", valueName: "n"),
        transform: { try integer($0, in: 1...10_000) })
    var maxConcurrentUploads: Int?

    @Option(
        help: ArgumentHelp("FULL, NORMAL or EXTRA: the SQLite sinks' synchronous pragma (default FULL).", valueName: "mode"),
        transform: { text in
            let mode = text.uppercased()
            guard ["FULL", "NORMAL", "EXTRA"].contains(mode) else {
                throw ValidationError("must be FULL, NORMAL or EXTRA, not \(text)")
            }
            return mode
        })
    var synchronous: String?

    @Option(
        help: ArgumentHelp(
            "Page size of SQLite sink databases created from now on: 512 to 65536, a power of two (default 16384).",
            valueName: "bytes"),
        transform: { text in
            guard let bytes = Int(text), SQLiteSink.Configuration.isValidPageSize(bytes) else {
                throw ValidationError("must be a power of two from 512 to 65536, not \(text)")
            }
            return bytes
        })
    var sqlitePageSize: Int?

    @Option(
        help: ArgumentHelp("Wait for a locked SQLite sink before 503, in ms (default 5000).", valueName: "ms"),
        transform: { try integer($0, in: 0...600_000) })
    var sinkBusyTimeout: Int?

    @Option(help: ArgumentHelp("Time to send a request head (default 10).", valueName: "seconds"), transform: seconds)
    var headerTimeout: Double?

    @Option(help: ArgumentHelp("Max stall while sending a body (default 30).", valueName: "seconds"), transform: seconds)
    var bodyTimeout: Double?

    @Option(help: ArgumentHelp("Idle time between requests (default 30).", valueName: "seconds"), transform: seconds)
    var keepAliveTimeout: Double?

    @Option(
        help: ArgumentHelp("Max stall while the client reads a response (default 30).", valueName: "seconds"),
        transform: seconds)
    var writeTimeout: Double?

    @Option(
        help: ArgumentHelp("Time for in-flight requests on SIGTERM/SIGINT (default 10).", valueName: "seconds"),
        transform: seconds)
    var shutdownGrace: Double?

    @Option(
        help: ArgumentHelp("Idle time before a Realm sync connection is closed (default 180).", valueName: "seconds"),
        transform: seconds)
    var syncIdleTimeout: Double?

    @Flag(help: "Serve the /_test/ diagnostic routes (never in production).")
    var enableTestRoutes = false

    @Option(
        help: ArgumentHelp(
            "The server log's lowest level: trace, debug, info, notice, warning, error, critical "
                + "(default: $INGEST_LOG_LEVEL, else the file's logLevel, else info).",
            valueName: "level"),
        transform: { text in
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                throw ValidationError("must be one of \(levelNames), not \(text)")
            }
            return level
        })
    var logLevel: Logger.Level?

    static let levelNames = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")

    /// `--log-level`, else `INGEST_LOG_LEVEL`; nil when neither is set.
    func logLevelFromFlagOrEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Logger.Level? {
        if let logLevel { return logLevel }
        guard let text = environment["INGEST_LOG_LEVEL"], !text.isEmpty else { return nil }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ValidationError("INGEST_LOG_LEVEL must be one of \(Self.levelNames), not \(text)")
        }
        return level
    }

    /// The file's (or the development) configuration with the flags applied.
    func apply(to configuration: inout ServerConfiguration) {
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let maxInflatedBytes { configuration.limits.maxInflatedBytes = maxInflatedBytes }
        if let maxInflateRatio { configuration.limits.maxInflateRatio = maxInflateRatio }
        // The Realm sync endpoint takes its limits from the configuration, as
        // the service is made before the HTTP settings.
        if let maxConnections { configuration.limits.maxConnections = maxConnections }
        if let writeTimeout { configuration.limits.writeTimeoutSeconds = writeTimeout }
        if let syncIdleTimeout { configuration.limits.syncIdleTimeoutSeconds = syncIdleTimeout }
    }

    /// The service options the flags set.
    func apply(to options: inout IngestService.Options) {
        if let maxConcurrentUploads { options.maxConcurrentUploads = maxConcurrentUploads }
        if let synchronous { options.sqlite.synchronous = synchronous }
        if let sqlitePageSize { options.sqlite.pageSize = sqlitePageSize }
        if let sinkBusyTimeout { options.sqlite.busyTimeoutMilliseconds = Int32(sinkBusyTimeout) }
    }

    /// The HTTP settings the flags set.
    func apply(to http: inout HTTPServerConfiguration) {
        if let workers { http.workerThreads = workers }
        if let maxConnections { http.maxConnections = maxConnections }
        if let maxHeaderBytes { http.maxHeaderBytes = maxHeaderBytes }
        if let maxBodyBytes { http.maxBodyBytes = maxBodyBytes }
        if let headerTimeout { http.headerTimeout = headerTimeout }
        if let bodyTimeout { http.bodyIdleTimeout = bodyTimeout }
        if let keepAliveTimeout { http.keepAliveTimeout = keepAliveTimeout }
        if let writeTimeout { http.writeTimeout = writeTimeout }
        if let shutdownGrace { http.shutdownGracePeriod = shutdownGrace }
    }
}

/// A flag's integer value within `range`.
func integer(_ text: String, in range: ClosedRange<Int>) throws -> Int {
    guard let n = Int(text), range.contains(n) else {
        throw ValidationError("must be an integer in \(range), not \(text)")
    }
    return n
}

/// A flag's positive, finite number of seconds.
func seconds(_ text: String) throws -> Double {
    guard let s = Double(text), s > 0, s.isFinite else {
        throw ValidationError("must be a positive number of seconds, not \(text)")
    }
    return s
}

/// Runs the server until SIGTERM or SIGINT, logging through swift-log.
///
/// Standard output carries exactly two lines: `listening on <url>` first
/// (tools and tests read the port from it) and `stopped` after a graceful
/// shutdown. The log (start-up, one line per request with its level,
/// errors, shutdown) goes to standard error.
struct Serve {
    var state: StateOptions
    var options: ServeOptions

    func run() throws {
        // Before any database is opened, while the process has one thread:
        // without memory statistics SQLite allocates without taking its
        // global mutex (the server reads none of those statistics).
        SQLiteConnection.disableMemoryStatistics()

        var configuration: ServerConfiguration
        do {
            configuration = try state.load()
        } catch {
            // The log's level may come from the file, so there is no log yet.
            emit("ingest-server: \(error)\n", to: 2)
            throw ExitCode.failure
        }
        options.apply(to: &configuration)
        let level = try options.logLevelFromFlagOrEnvironment() ?? configuration.logLevel ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "ingest-server")

        var serviceOptions = IngestService.Options()
        options.apply(to: &serviceOptions)
        serviceOptions.logger = logger
        let service: IngestService
        do {
            service = try IngestService(configuration: configuration, options: serviceOptions)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        defer { service.close() }
        var router = HTTPRouter()
        service.addRoutes(to: &router)
        if options.enableTestRoutes { router.addDiagnosticRoutes() }
        var http = service.httpServerConfiguration
        options.apply(to: &http)
        http.handleSignals = true

        let server = HTTPServer(configuration: http, router: router)
        do {
            try server.start()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        emit("listening on \(server.url)\n")
        logStartup(service: service, url: server.url, development: state.configPath == nil, to: logger)
        do {
            try server.run()
        } catch {
            logger.critical("the server stopped: \(error)")
            throw ExitCode.failure
        }
        logger.notice("stopped")
        emit("stopped\n")
    }

    /// The start-up lines: where the server listens, each app with its sink
    /// and endpoints, the operations endpoints.
    func logStartup(service: IngestService, url: String, development: Bool, to logger: Logger) {
        logger.notice("listening on \(url)", metadata: ["url": "\(url)", "log_level": "\(logger.logLevel)"])
        if development {
            logger.notice("development server: data in \(service.configuration.stateDirectory) (not for production)")
        }
        for app in service.apps {
            let providers = app.configuration.auth.enabledProviders.map(\.rawValue).joined(separator: ", ")
            logger.notice(
                "app \(app.id)\(app.configuration.developmentMode ? " (development mode)" : ""): sink \(app.sink.description)",
                metadata: ["app": "\(app.id)"])
            logger.notice(
                "  login:  POST \(url)\(ProtocolRoutes.loginPath(appId: app.id, provider: "{\(providers)}"))",
                metadata: ["app": "\(app.id)"])
            logger.notice("  upload: POST \(url)\(ProtocolRoutes.uploadPath(appId: app.id))", metadata: ["app": "\(app.id)"])
        }
        let operations =
            "status: \(url)\(ProtocolRoutes.statusPagePath)  metrics: \(url)\(ProtocolRoutes.metricsPath)  "
            + "health: \(url)\(ProtocolRoutes.healthPath)"
        logger.notice("\(operations)")
    }
}
