// log-handler-child: a server app on swift-log, which the swift-log backend's
// crash test starts and kill -9s.
//
//   log-handler-child log N   logs in anonymously, bootstraps swift-log with
//                             IngestLogHandler (and a metadata provider that
//                             reads a task-local request id), logs N rounds of
//                             events through three libraries' Loggers, calls
//                             flush(), prints "flushed <committed> <dropped>"
//                             and waits to be killed
//   log-handler-child drain   restores the logged-in user, waits until every
//                             committed event is uploaded, prints "uploaded"
//
// The app id comes from $APP_ID, the server from $DATAINGEST_BASE_URL and the
// metadata directory from the current directory (App.Configuration's defaults).
#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import Logging

let mode = CommandLine.arguments.dropFirst().first ?? ""
let app = App(id: ProcessInfo.processInfo.environment["APP_ID"] ?? "missing-APP_ID")

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("log-handler-child: \(message)\n".utf8))
    exit(1)
}

/// The request being handled, as a server framework keeps it.
enum RequestContext {
    @TaskLocal static var id: String?
}

/// An error a library passes to `logger.error(_:error:)`.
struct PaymentError: Error, CustomStringConvertible {
    var code: Int
    var description: String { "card declined (\(code))" }
}

/// Three libraries, each with its own Logger made on first use (after the bootstrap).
enum HTTPLibrary {
    static let logger = Logger(label: "com.example.http")
    static func served(_ seq: Int) {
        logger.debug("below the level: not recorded", metadata: ["seq": "\(seq)"])
        logger.info("GET /items/\(seq) 200", metadata: ["seq": "\(seq)", "route": "/items/{id}", "status": .stringConvertible(200)])
    }
}

enum DatabaseLibrary {
    static let logger: Logger = {
        var logger = Logger(label: "com.example.db")
        logger[metadataKey: "db"] = "orders"
        return logger
    }()
    static func query(_ seq: Int) {
        logger.warning("slow query", metadata: ["seq": "\(seq)", "ms": .stringConvertible(seq % 50)])
    }
}

enum PaymentsLibrary {
    static func charge(_ seq: Int) {
        let logger = Logger(label: "com.example.payments")
        logger.error(
            "payment failed", error: PaymentError(code: seq),
            metadata: [
                "seq": "\(seq)", "order": ["id": "A-\(seq)", "items": ["1", "2"]],
            ])
    }
}

switch mode {
case "log":
    guard let rounds = CommandLine.arguments.dropFirst(2).first.flatMap({ Int($0) }) else { fail("usage: log N") }
    let user: User
    do {
        user = try await app.login(credentials: .anonymous)
    } catch {
        fail("login failed: \(error)")
    }
    var configuration = LogWriter.Configuration()
    configuration.whenFull = .wait(milliseconds: 30_000)
    let writer: LogWriter
    do {
        writer = try LogWriter(user: user, configuration: configuration)
    } catch {
        fail("no writer: \(error)")
    }
    LoggingSystem.bootstrap(
        IngestLogHandler.factory(writer),
        metadataProvider: .init { RequestContext.id.map { ["request_id": .string($0)] } ?? [:] })
    for seq in 0..<rounds {
        RequestContext.$id.withValue("req-\(seq)") {
            HTTPLibrary.served(seq)
            DatabaseLibrary.query(seq)
            PaymentsLibrary.charge(seq)
        }
    }
    guard writer.flush(timeout: 60) else { fail("flush timed out") }
    let statistics = writer.currentStatistics
    print("flushed \(statistics.committedEvents) \(statistics.droppedEvents)")
    fflush(nil)
    // Killed here (kill -9), uploads possibly under way.
    while true { sleep(60) }

case "drain":
    guard let user = app.currentUser else { fail("no logged-in user to restore") }
    do {
        try await user.session.wait(for: .upload, timeout: 60)
    } catch {
        fail("not uploaded: \(error)")
    }
    print("uploaded")
    fflush(nil)
    exit(0)

default:
    fail("unknown mode '\(mode)'")
}
