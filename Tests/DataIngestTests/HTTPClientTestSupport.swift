#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// One accepted connection of a ``TinyHTTPServer``: blocking reads with a
/// 5 s timeout, so a test never hangs on a client that does not send.
final class TinyConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads one request (head and `Content-Length` body); nil at end of
    /// stream or timeout. Returns the request line and the body.
    func readRequest() -> (line: String, headers: [String: String], body: [UInt8])? {
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let line = lines.removeFirst()
                var headers: [String: String] = [:]
                for field in lines {
                    guard let colon = field.firstIndex(of: ":") else { continue }
                    headers[field[..<colon].lowercased()] = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                while buffer.count < end + 4 + length {
                    guard fill() else { return nil }
                }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return (line, headers, body)
            }
            guard fill() else { return nil }
        }
    }

    /// Reads the request head only (the body may still be on its way).
    func readHeadOnly() -> Bool {
        while headEnd() == nil {
            guard fill() else { return false }
        }
        return true
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    func write(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            sent += n
        }
    }

    /// Closes with a reset (as the kernel does for a killed process with unread input).
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        _ = Glibc.close(fd)
    }

    func close() { _ = Glibc.close(fd) }
}

/// A scripted HTTP server on 127.0.0.1 for the transport's tests: a thread
/// accepts connections one after another and runs `handler` on each (with
/// its 0-based number). `stop()` ends it; every wait is bounded.
final class TinyHTTPServer: @unchecked Sendable {  // `accepted` is in a LockedBox; the rest is immutable
    let port: UInt16
    private let listenFD: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let acceptedBox = LockedBox(0)
    private let servedBox = LockedBox(0)
    private let stopped = LockedBox(false)

    /// Connections accepted so far.
    var accepted: Int { acceptedBox.withLock { $0 } }
    /// Connections whose handler has returned (and closed them) so far.
    var served: Int { servedBox.withLock { $0 } }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Listens on `port` (0: ephemeral) and serves each connection with `handler`.
    init(port requested: UInt16 = 0, handler: @escaping @Sendable (TinyConnection, Int) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket failed") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = requested.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw TestSupportError("cannot listen on 127.0.0.1:\(requested): \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listenFD = fd
        let thread = Thread { [self] in
            var number = 0
            while !stopped.withLock({ $0 }) && number < 100 {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    break
                }
                acceptedBox.withLock { $0 += 1 }
                handler(TinyConnection(fd: client), number)
                servedBox.withLock { $0 += 1 }
                number += 1
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops accepting and waits (at most 10 s) for the current handler.
    func stop() {
        guard
            !stopped.withLock({ state in
                defer { state = true }; return state
            })
        else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 10)
        Glibc.close(listenFD)
    }

    deinit { stop() }
}

/// A GET request to `path` of `server` with a short timeout.
func tinyRequest(
    _ server: TinyHTTPServer, _ path: String = "/", method: String = "GET", body: Data? = nil,
    timeout: Double = 5
) -> TransportRequest {
    TransportRequest(method: method, url: server.baseURL.appendingPathComponent(path), body: body, timeout: timeout)
}
