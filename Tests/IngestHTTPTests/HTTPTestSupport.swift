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
        guard fd >= 0 else { throw TestSupportError("socket failed") }
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
            throw TestSupportError("connect failed: errno \(e)")
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
            guard n > 0 else { throw TestSupportError("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Bytes received but not yet returned as a response.
    var bufferedByteCount: Int { buffer.count }

    /// Closes the sending side, so the server sees end of input.
    func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes; false on EOF or error. Waits at most until `deadline`.
    private func fill(deadline: Double) throws -> Bool {
        let remaining = deadline - monotonicNow()
        guard remaining > 0 else { throw TestSupportError("timed out reading from the server") }
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
        let deadline = monotonicNow() + timeout
        var headEnd: Int?
        while headEnd == nil {
            if let r = findHeadEnd() { headEnd = r; break }
            guard try fill(deadline: deadline) else { throw TestSupportError("connection closed before a response head") }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        buffer.removeSubrange(..<(headEnd! + 4))
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else {
            throw TestSupportError("bad status line: \(statusLine)")
        }
        let headers: [(String, String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = HTTPTestResponse(status: status, headers: headers, body: [])
        if status == 100 || status == 101 || status == 204 || status == 304 || headRequest { return response }
        if let lengthText = response.header("content-length"), let length = Int(lengthText) {
            while buffer.count < length {
                guard try fill(deadline: deadline) else { throw TestSupportError("connection closed inside a body") }
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
        let deadline = monotonicNow() + timeout
        while buffer.count < count {
            guard try fill(deadline: deadline) else { throw TestSupportError("connection closed after \(buffer.count) of \(count) bytes") }
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
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = max(1, Int32((deadline - monotonicNow()) * 1000))
            if poll(&pfd, 1, remaining) <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return true }
        }
        return false
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
