#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport
import Logging
import Testing

/// A test failure with a message (setup problems, protocol surprises).
struct HTTPTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic seconds, for bounded waits in tests.
func httpTestNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A temporary directory removed when the value is released.
final class HTTPTestDirectory {
    let path: String
    init() throws {
        var template = Array("\(NSTemporaryDirectory())/http-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HTTPTestError("mkdtemp failed") }
        path = String(cString: made)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The `ingest-server` binary built next to the test bundle.
func ingestServerBinary() throws -> String {
    if let override = ProcessInfo.processInfo.environment["INGEST_SERVER_BINARY"] { return override }
    var candidates: [String] = []
    let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    candidates.append(argv0.deletingLastPathComponent().appendingPathComponent("ingest-server").path)
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("ingest-server").path)
    }
    // An .xctest bundle directory: the binary is next to the bundle.
    candidates.append(argv0.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("ingest-server").path)
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
        return candidate
    }
    throw HTTPTestError("ingest-server binary not found in \(candidates); build it with `swift build`")
}

/// A real `ingest-server` process on 127.0.0.1 and an ephemeral port,
/// killed by PID when released.
final class HTTPTestServer {
    let process = Process()
    let port: UInt16
    let directory: HTTPTestDirectory
    private let stdoutFD: Int32
    private var stdoutBuffer: [UInt8] = []

    /// Starts the server with `--port 0 --enable-test-routes` plus `arguments`.
    init(_ arguments: [String] = []) throws {
        directory = try HTTPTestDirectory()
        process.executableURL = URL(fileURLWithPath: try ingestServerBinary())
        process.arguments = ["--port", "0", "--enable-test-routes"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        let out = Pipe()
        process.standardOutput = out
        _ = FileManager.default.createFile(atPath: directory.path + "/stderr.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: directory.path + "/stderr.log")
        try process.run()
        stdoutFD = out.fileHandleForReading.fileDescriptor
        var port: UInt16 = 0
        let line = try Self.readLine(fd: stdoutFD, buffer: &stdoutBuffer, timeout: 20)
        if let range = line.range(of: "listening on http://127.0.0.1:"),
           let p = UInt16(line[range.upperBound...].trimmingCharacters(in: .whitespaces)) {
            port = p
        }
        guard port != 0 else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw HTTPTestError("unexpected first line from ingest-server: \(line)")
        }
        self.port = port
    }

    deinit { stop() }

    var pid: Int32 { process.processIdentifier }

    /// Kills the process (SIGKILL) if it still runs.
    func stop() {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits up to `timeout` seconds for the process to exit; its status or nil.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = httpTestNow() + timeout
        while process.isRunning && httpTestNow() < deadline { usleep(10_000) }
        if process.isRunning { return nil }
        return process.terminationStatus
    }

    /// The next line the server prints, waiting up to `timeout` seconds.
    func nextStdoutLine(timeout: Double) throws -> String {
        try Self.readLine(fd: stdoutFD, buffer: &stdoutBuffer, timeout: timeout)
    }

    /// The server's stderr so far.
    var stderrText: String {
        (try? String(contentsOfFile: directory.path + "/stderr.log", encoding: .utf8)) ?? ""
    }

    private static func readLine(fd: Int32, buffer: inout [UInt8], timeout: Double) throws -> String {
        let deadline = httpTestNow() + timeout
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline - httpTestNow()
            guard remaining > 0 else { throw HTTPTestError("timed out waiting for a line from the server") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { throw HTTPTestError("server stdout closed") }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// A new raw connection to the server.
    func connect() throws -> HTTPTestConnection { try HTTPTestConnection(port: port) }

    /// One request on a fresh connection, returning the response.
    func request(_ raw: String, timeout: Double = 5) throws -> HTTPTestResponse {
        let connection = try connect()
        try connection.send(raw)
        return try connection.readResponse(timeout: timeout)
    }
}

/// A parsed HTTP response as the tests see it.
struct HTTPTestResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking client socket to 127.0.0.1 with bounded reads.
final class HTTPTestConnection {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPTestError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw HTTPTestError("connect failed: errno \(e)")
        }
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    /// Closes the socket (idempotent).
    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw HTTPTestError("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Bytes received but not yet returned as a response.
    var bufferedByteCount: Int { buffer.count }

    /// Closes the sending side, so the server sees end of input.
    func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes; false on EOF or error. Waits at most until `deadline`.
    private func fill(deadline: Double) throws -> Bool {
        let remaining = deadline - httpTestNow()
        guard remaining > 0 else { throw HTTPTestError("timed out reading from the server") }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(remaining * 1000) + 1)
        if ready == 0 { return try fill(deadline: deadline) }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n <= 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads one response (a `100 Continue` counts as one). Bodies are framed
    /// by Content-Length, or by connection close if it is missing.
    func readResponse(timeout: Double = 5, headRequest: Bool = false) throws -> HTTPTestResponse {
        let deadline = httpTestNow() + timeout
        var headEnd: Int?
        while headEnd == nil {
            if let r = findHeadEnd() { headEnd = r; break }
            guard try fill(deadline: deadline) else { throw HTTPTestError("connection closed before a response head") }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        buffer.removeSubrange(..<(headEnd! + 4))
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else {
            throw HTTPTestError("bad status line: \(statusLine)")
        }
        let headers: [(String, String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = HTTPTestResponse(status: status, headers: headers, body: [])
        if status == 100 || status == 101 || status == 204 || status == 304 || headRequest { return response }
        if let lengthText = response.header("content-length"), let length = Int(lengthText) {
            while buffer.count < length {
                guard try fill(deadline: deadline) else { throw HTTPTestError("connection closed inside a body") }
            }
            response.body = Array(buffer[..<length])
            buffer.removeSubrange(..<length)
        } else {
            while try fill(deadline: deadline) {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Reads exactly `count` bytes (after an upgrade: the new protocol's).
    func readBytes(_ count: Int, timeout: Double = 5) throws -> [UInt8] {
        let deadline = httpTestNow() + timeout
        while buffer.count < count {
            guard try fill(deadline: deadline) else { throw HTTPTestError("connection closed after \(buffer.count) of \(count) bytes") }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return bytes
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// Whether the server closes the connection within `timeout` seconds
    /// (buffered and arriving bytes are discarded).
    func waitForClose(timeout: Double) -> Bool {
        let deadline = httpTestNow() + timeout
        while httpTestNow() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = max(1, Int32((deadline - httpTestNow()) * 1000))
            if poll(&pfd, 1, remaining) <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return true }
        }
        return false
    }
}

/// Runs an external tool; nil if it is not installed.
func runTool(_ name: String, _ arguments: [String], timeout: Double = 20) throws -> (status: Int32, output: String)? {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let paths = searchPath.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/bin/\(name)", "/usr/local/bin/\(name)"]
    guard let path = paths.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let directory = try HTTPTestDirectory()
    let outPath = directory.path + "/out"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    let handle = FileHandle(forWritingAtPath: outPath)
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    let deadline = httpTestNow() + timeout
    while process.isRunning && httpTestNow() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw HTTPTestError("\(name) did not finish within \(timeout) s")
    }
    let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    return (process.terminationStatus, output)
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
