// ServerLogging: a small HTTP service that logs through swift-log's Logger
// only; one LoggingSystem.bootstrap line sends every event (the access log,
// the handlers', and those of any library that logs) into the ingest
// server's database, where it survives a crash of the service once committed.
//
//   ServerLogging [--app-id ID] [--base-url URL] [--port N] [--data-dir DIR] [--upload-timeout S] [--console]
//
// Routes: GET /hello?name=X, GET /orders/{id}, POST /echo, GET /fail (500).
// SIGTERM or SIGINT: stops serving, commits the queued log events, waits
// (bounded) for their upload, prints a summary and exits 0.
#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import DataIngest
import Foundation
import IngestCommandLine
import IngestHTTP
import Logging
import Synchronization

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("ServerLogging: \(message)\n".utf8))
    exit(status)
}

/// The command line (swift-argument-parser: `--help` is generated, usage errors exit 2).
struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ServerLogging",
        abstract: "An HTTP service on 127.0.0.1 whose every log event goes into the ingest server's LogEvent collection.",
        discussion: """
            It logs through swift-log's Logger only, bootstrapped with IngestLogHandler. Routes: \
            GET /hello?name=X, GET /orders/{id}, POST /echo, GET /fail. Stop it with SIGTERM or Ctrl-C: queued \
            events are committed and uploaded (bounded wait) before it exits.

            Exit status: 0 after a clean stop with everything uploaded, 1 failure, 2 usage error.
            """)

    /// `--app-id` (or `$DATAINGEST_APP_ID`) and `--base-url`.
    @OptionGroup var server: ServerOptions

    @Option(
        help: ArgumentHelp("This service's port (default 8080; 0 picks a free one).", valueName: "n"),
        transform: { text in
            guard let port = Int(text), (0...65_535).contains(port) else { throw ValidationError("--port needs a port number") }
            return port
        })
    var port = 8080

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Pending log events and users (default ./server-logging-data).", valueName: "dir"))
    var dataDirectoryOption: String?

    @Option(
        name: .customLong("upload-timeout"),
        help: ArgumentHelp(
            "How long to wait for the upload at exit, in seconds (default 30).", valueName: "s"),
        transform: { text in
            guard let seconds = Double(text), seconds > 0 else { throw ValidationError("--upload-timeout needs seconds") }
            return seconds
        })
    var uploadTimeout = 30.0

    @Flag(help: "Also log to standard error (swift-log's StreamLogHandler, multiplexed).")
    var console = false

    var dataDirectory: String { dataDirectoryOption ?? FileManager.default.currentDirectoryPath + "/server-logging-data" }
}

let options = Options.parseOrExitWithUsageStatus()
let port = options.port
let uploadTimeout = options.uploadTimeout
let dataDirectory = options.dataDirectory

// 1. Log in, create the writer (one per process) and bootstrap swift-log with it.
let app = App(id: options.server.appId, configuration: App.Configuration(baseURL: options.server.baseURL, metadataDirectory: dataDirectory))
let user: User
let writer: LogWriter
do {
    user = try await app.login(credentials: .anonymous)
    var configuration = LogWriter.Configuration()
    configuration.appVersion = "server-logging/1.0"
    writer = try LogWriter(user: user, configuration: configuration)
} catch {
    fail("could not start logging to \(app.configuration.baseURL): \(error)", 1)
}
if options.console {
    LoggingSystem.bootstrap(IngestLogHandler.factory(writer, alsoTo: StreamLogHandler.standardError))
} else {
    LoggingSystem.bootstrap(IngestLogHandler.factory(writer))
}

// 2. The app's loggers: one for the access log, one per request in handlers.
var accessLog = Logger(label: "server-logging.access")
accessLog[metadataKey: "service"] = "server-logging"
let appLog = Logger(label: "server-logging.app")

/// Hands out a logger per request, carrying the request's id in its metadata.
final class RequestLogging: Sendable {
    let base: Logger
    let counter = Atomic<Int>(0)

    init(base: Logger) { self.base = base }

    var handled: Int { counter.load(ordering: .relaxed) }

    func logger(for request: HTTPRequest) -> Logger {
        var logger = base
        let id = counter.wrappingAdd(1, ordering: .relaxed).newValue
        logger[metadataKey: "request_id"] = .string(request.headers["x-request-id"] ?? "req-\(id)")
        return logger
    }
}
let requests = RequestLogging(base: appLog)

var router = HTTPRouter()
router.get("/hello") { [requests] request in
    let log = requests.logger(for: request)
    let name = request.queryParameter("name") ?? "world"
    log.debug("greeting", metadata: ["name": .string(name)])
    return .text("hello, \(name)\n")
}
router.get("/orders/{id}") { [requests] request in
    let log = requests.logger(for: request)
    let id = request.pathParameters["id"] ?? ""
    guard let number = Int(id) else {
        log.warning("bad order id", metadata: ["order_id": .string(id)])
        return .error(.badRequest, code: "bad_order_id", message: "order ids are numbers")
    }
    log.info("order looked up", metadata: ["order_id": .string(id)])
    return .json(#"{"order":\#(number),"status":"shipped"}"#)
}
router.post("/echo") { [requests] request in
    requests.logger(for: request).info("echo", metadata: ["bytes": .stringConvertible(request.body.count)])
    return HTTPResponse(status: .ok, body: request.body)
}
router.get("/fail") { [requests] request in
    requests.logger(for: request).error("something failed on purpose")
    return .error(.internalServerError, code: "failed", message: "this route always fails")
}

var configuration = HTTPServerConfiguration()
configuration.port = port
configuration.handleSignals = true
// The access log: one event per response, from the server's request observer.
// A log call only queues the event, so it is safe on the event loop.
configuration.requestObserver = { [accessLog] summary in
    let level: Logger.Level = summary.status >= 500 ? .error : summary.status >= 400 ? .warning : .info
    accessLog.log(
        level: level, "\(summary.method) \(summary.path) \(summary.status)",
        metadata: [
            "method": .string(summary.method), "path": .string(summary.path),
            "route": .string(summary.routePattern ?? "unmatched"), "status": .stringConvertible(summary.status),
            "duration_ms": .stringConvertible((summary.durationSeconds * 1_000_000).rounded() / 1_000),
            "response_bytes": .stringConvertible(summary.responseBodyBytes),
        ])
}
let server = HTTPServer(configuration: configuration, router: router)
do {
    try server.start()
} catch {
    fail("cannot listen on port \(port): \(error)", 1)
}
print("listening on \(server.url)")
fflush(nil)
appLog.notice("service started", metadata: ["url": .string(server.url)])
do {
    try server.run()
} catch {
    appLog.critical("server failed", error: error)
}

// 3. Clean exit: commit what is queued, then wait for the upload.
appLog.notice("service stopping")
writer.shutdown()
let statistics = writer.currentStatistics
do {
    try await user.session.wait(for: .upload, timeout: uploadTimeout)
} catch {
    fail("\(statistics.committedEvents) events committed, but not all uploaded: \(error); they are uploaded at the next start", 1)
}
print(
    "stopped: \(requests.handled) requests handled, \(statistics.committedEvents) log events committed and uploaded, \(statistics.droppedEvents) dropped"
)
fflush(nil)
exit(0)
