#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport
import Logging
import Testing
import IngestTestSupport

/// A real `ingest-server` process on 127.0.0.1 and an ephemeral port,
/// killed by PID when released (IngestTestSupport's launcher, with the
/// test routes on).
final class HTTPTestServer {
    let server: IngestServerProcess
    let directory: TemporaryDirectory
    var port: UInt16 { server.port }

    /// Starts the server with `--port 0 --enable-test-routes` plus `arguments`.
    init(_ arguments: [String] = []) throws {
        directory = try TemporaryDirectory("http")
        server = try IngestServerProcess(
            in: directory.path, arguments: ["--enable-test-routes"] + arguments,
            logName: "stderr.log")
    }

    var pid: Int32 { server.pid }
    var isRunning: Bool { server.isRunning }

    /// Kills the process (SIGKILL) if it still runs.
    func stop() { server.kill9() }

    /// Waits up to `timeout` seconds for the process to exit; its status or nil.
    func waitForExit(timeout: Double) -> Int32? { server.waitForExit(timeout: timeout) }

    /// The next line the server prints, waiting up to `timeout` seconds.
    func nextStdoutLine(timeout: Double) throws -> String { try server.nextOutputLine(timeout: timeout) }

    /// The server's stderr so far.
    var stderrText: String { server.logText }

    /// A new raw connection to the server.
    func connect() throws -> LoopbackConnection { try LoopbackConnection(port: port) }

    /// One request on a fresh connection, returning the response.
    func request(_ raw: String, timeout: Double = 5) throws -> LoopbackResponse {
        let connection = try connect()
        try connection.send(raw)
        return try connection.readResponse(timeout: timeout)
    }
}

/// A swift-log handler that keeps every message, for tests of what a
/// component logs.
struct RecordingLogHandler: LogHandler {
    let messages: LockedBox<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    init(_ messages: LockedBox<[String]>) { self.messages = messages }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        messages.withLock { $0.append(event.message.description) }
    }
}
