// ServerLogging: a small HTTP service that logs every request through
// IngestLogger, so its access log and application log end up in the ingest
// server's database (and survive a crash of the service once committed).
//
//   ServerLogging --app-id ID [--base-url URL] [--port N] [--data-dir DIR]
//
// Routes: GET /hello?name=X, GET /orders/{id}, POST /echo, GET /fail (500).
// SIGTERM or SIGINT: stops serving, commits the queued log events, waits
// (bounded) for their upload, prints a summary and exits 0.
#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import IngestHTTP
import IngestSupport

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("ServerLogging: \(message)\n".utf8))
    exit(status)
}

let usage = """
    usage: ServerLogging --app-id ID [--base-url URL] [--port N] [--data-dir DIR] [--upload-timeout S]

    An HTTP service on 127.0.0.1 whose every request is logged through IngestLogger into the
    ingest server's LogEvent collection. Routes: GET /hello?name=X, GET /orders/{id},
    POST /echo, GET /fail. Stop it with SIGTERM or Ctrl-C: queued events are committed and
    uploaded (bounded wait) before it exits.

      --app-id ID         the ingest app id (default: $DATAINGEST_APP_ID)
      --base-url URL      the ingest server (default: $DATAINGEST_BASE_URL or http://127.0.0.1:9090)
      --port N            this service's port (default 8080; 0 picks a free one)
      --data-dir DIR      pending log events and users (default ./server-logging-data)
      --upload-timeout S  how long to wait for the upload at exit (default 30)

    exit status: 0 after a clean stop with everything uploaded, 1 failure, 2 usage error
    """

var flags: [String: String] = [:]
let arguments = Array(CommandLine.arguments.dropFirst())
var index = 0
while index < arguments.count {
    let flag = arguments[index]
    if flag == "-h" || flag == "--help" {
        print(usage)
        exit(0)
    }
    let known = ["--app-id", "--base-url", "--port", "--data-dir", "--upload-timeout"]
    guard known.contains(flag), index + 1 < arguments.count else { fail("unexpected argument '\(flag)'\n\n\(usage)", 2) }
    flags[String(flag.dropFirst(2))] = arguments[index + 1]
    index += 2
}
guard let appId = flags["app-id"] ?? ProcessInfo.processInfo.environment["DATAINGEST_APP_ID"] else {
    fail("no app id: pass --app-id (ingest-server prints it) or set DATAINGEST_APP_ID", 2)
}
guard let port = Int(flags["port"] ?? "8080"), (0...65_535).contains(port) else { fail("--port needs a port number", 2) }
guard let uploadTimeout = Double(flags["upload-timeout"] ?? "30"), uploadTimeout > 0 else { fail("--upload-timeout needs seconds", 2) }
let baseURL = flags["base-url"].flatMap { URL(string: $0) }
let dataDirectory = flags["data-dir"] ?? FileManager.default.currentDirectoryPath + "/server-logging-data"

// 1. Log in and create the writer: one per process, shared by every logger.
let app = App(id: appId, configuration: App.Configuration(baseURL: baseURL, metadataDirectory: dataDirectory))
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

// 2. The app's loggers: one for the access log, one per request in handlers.
var accessLog = IngestLogger(label: "server-logging.access", writer: writer)
accessLog[metadataKey: "service"] = "server-logging"
let appLog = IngestLogger(label: "server-logging.app", writer: writer)

/// Hands out a logger per request, carrying the request's id in its metadata.
struct RequestLogging: Sendable {
    let base: IngestLogger
    let counter = LockedBox(0)

    var handled: Int { counter.withLock { $0 } }

    func logger(for request: HTTPRequest) -> IngestLogger {
        var logger = base
        let id = counter.withLock { value -> Int in
            value += 1
            return value
        }
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
    requests.logger(for: request).info("echo", metadata: ["bytes": .describing(request.body.count)])
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
    let level: IngestLogger.Level = summary.status >= 500 ? .error : summary.status >= 400 ? .warning : .info
    accessLog.log(level: level, "\(summary.method) \(summary.path) \(summary.status)", metadata: [
        "method": .string(summary.method), "path": .string(summary.path),
        "route": .string(summary.routePattern ?? "unmatched"), "status": .describing(summary.status),
        "duration_ms": .describing((summary.durationSeconds * 1_000_000).rounded() / 1_000),
        "response_bytes": .describing(summary.responseBodyBytes),
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
    appLog.critical("server failed: \(error)")
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
print("stopped: \(requests.handled) requests handled, \(statistics.committedEvents) log events committed and uploaded, \(statistics.droppedEvents) dropped")
fflush(nil)
exit(0)
