#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A real `ingest-server` process on 127.0.0.1, started from the binary
/// built next to the tests, killed by PID (`SIGKILL`) when released. Its
/// first line of output (`listening on http://127.0.0.1:PORT`) gives the
/// port; its standard error is appended to ``logPath``.
///
/// ```swift
/// let directory = try TemporaryDirectory("sync")
/// let server = try IngestServerProcess(in: directory.path, arguments: ["--data-dir", directory.path("data")])
/// print(server.port)
/// server.kill9()
/// try server.restart()   // the same port and arguments
/// ```
package final class IngestServerProcess {
    /// The working directory.
    package let directory: String
    /// Everything after `--port N`.
    package let arguments: [String]
    /// Where standard error goes (appended, across restarts).
    package let logPath: String
    package private(set) var port: UInt16 = 0
    private var process: Process?
    private var output: LineReader?

    /// The environment the process runs in; nil: the test's.
    package let environment: [String: String]?

    /// Starts the server in `directory` with `--port port` (0: the kernel
    /// picks one) and `arguments`, in `environment` (nil: the test's).
    package init(
        in directory: String, arguments: [String], port: UInt16 = 0, logName: String = "server-stderr.log",
        environment: [String: String]? = nil
    ) throws {
        self.directory = directory
        self.arguments = arguments
        self.logPath = directory + "/" + logName
        self.environment = environment
        try start(port: port)
    }

    deinit { kill9() }

    package var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    package var isRunning: Bool { process?.isRunning ?? false }
    /// The process id (0 before the first start).
    package var pid: Int32 { process?.processIdentifier ?? 0 }

    /// Starts the process and waits (20 s at most) for its first line.
    package func start(port requested: UInt16) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-server"))
        process.arguments = ["--port", String(requested)] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        if let environment { process.environment = environment }
        let out = Pipe()
        process.standardOutput = out
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)
        log?.seekToEndOfFile()
        process.standardError = log
        try process.run()
        self.process = process
        let reader = LineReader(fd: out.fileHandleForReading.fileDescriptor)
        output = reader
        let line = (try? reader.next(timeout: 20)) ?? ""
        guard let range = line.range(of: "listening on http://127.0.0.1:"),
            let port = UInt16(line[range.upperBound...].trimmingCharacters(in: .whitespaces))
        else {
            kill9()
            throw TestSupportError("ingest-server did not start: '\(line)' \(logText)")
        }
        self.port = port
    }

    /// Starts the server again on the same port and arguments (up to 20
    /// tries, 250 ms apart, while the port frees).
    package func restart() throws {
        var lastError: Error?
        for _ in 0..<20 {
            do {
                try start(port: port)
                return
            } catch {
                lastError = error
                usleep(250_000)
            }
        }
        throw lastError ?? TestSupportError("restart failed")
    }

    /// `kill -9` by PID and wait for it (idempotent).
    package func kill9() {
        guard let process, process.isRunning else { return }
        reap(process, within: 0)
    }

    /// The next line the server prints, waiting at most `timeout` seconds.
    package func nextOutputLine(timeout: Double) throws -> String {
        guard let output else { throw TestSupportError("the server was never started") }
        return try output.next(timeout: timeout)
    }

    /// Waits at most `timeout` seconds for the process to exit; its status or nil.
    package func waitForExit(timeout: Double) -> Int32? {
        guard let process else { return nil }
        return IngestTestSupport.waitForExit(process, timeout: timeout)
    }

    /// What the server wrote to standard error so far.
    package var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
