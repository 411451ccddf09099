#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A port that was free on 127.0.0.1 a moment ago (bound to port 0, then
/// released), for a server a test starts on a port it must know in advance.
package func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket failed: errno \(errno)") }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
    }
    guard bound == 0 else { throw TestSupportError("cannot find a free port on 127.0.0.1: errno \(errno)") }
    return UInt16(bigEndian: address.sin_port)
}

private func loopbackAddress(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// An HTTP/1.1 response as a test reads it off the wire.
package struct LoopbackResponse {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]

    /// The first header named `name`, compared without case.
    package func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    package var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, if it is one.
    package var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }

    /// An integer member of the JSON body.
    package func int(_ key: String) -> Int? { (json?[key] as? NSNumber)?.intValue }

    /// A string member of the JSON body.
    package func string(_ key: String) -> String? { json?[key] as? String }
}

/// A blocking TCP connection to 127.0.0.1 with bounded reads, closed on
/// release: raw bytes both ways, or HTTP/1.1 responses read off it.
package final class LoopbackConnection {
    package private(set) var fd: Int32
    /// Bytes received but not yet returned.
    private var buffer: [UInt8] = []

    package init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket failed: errno \(errno)") }
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(fd)
            throw TestSupportError("connect to 127.0.0.1:\(port) failed: errno \(error)")
        }
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    /// Closes the socket (idempotent).
    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw TestSupportError("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Sends what the server takes of `bytes`, stopping without an error
    /// when it stops reading (a server may answer, 413 say, and close
    /// before the whole body is in). Returns how many bytes were sent.
    @discardableResult
    package func sendWhileAccepted(_ bytes: [UInt8]) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            offset += n
        }
        return offset
    }

    /// Bytes received but not yet returned as a response or by ``receive(timeout:)``.
    package var bufferedByteCount: Int { buffer.count }

    /// Closes the sending side, so the server sees end of input.
    package func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// What is buffered, or else what arrives within `timeout` seconds (at
    /// least one byte); empty at end of input or on a reset connection.
    package func receive(timeout: Double) throws -> [UInt8] {
        if !buffer.isEmpty {
            defer { buffer = [] }
            return buffer
        }
        return try fill(deadline: monotonicNow() + timeout) ? buffer.drain() : []
    }

    /// Reads more bytes into the buffer; false at end of input (or a reset).
    /// Waits at most until `deadline`.
    private func fill(deadline: Double) throws -> Bool {
        while true {
            let remaining = deadline - monotonicNow()
            guard remaining > 0 else { throw TestSupportError("timed out reading from the server") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(min(remaining, 1) * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
    }

    /// Reads one response (a `100 Continue` counts as one). Bodies are framed
    /// by Content-Length, or by connection close if it is missing; a 101
    /// leaves the bytes after its head to the new protocol.
    package func readResponse(timeout: Double = 5, headRequest: Bool = false) throws -> LoopbackResponse {
        let deadline = monotonicNow() + timeout
        var headEnd = findHeadEnd()
        while headEnd == nil {
            guard try fill(deadline: deadline) else { throw TestSupportError("connection closed before a response head") }
            headEnd = findHeadEnd()
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
        var response = LoopbackResponse(status: status, headers: headers, body: [])
        if status == 100 || status == 101 || status == 204 || status == 304 || headRequest { return response }
        if let lengthText = response.header("content-length"), let length = Int(lengthText) {
            while buffer.count < length {
                guard try fill(deadline: deadline) else { throw TestSupportError("connection closed inside a body") }
            }
            response.body = Array(buffer[..<length])
            buffer.removeSubrange(..<length)
        } else {
            while try fill(deadline: deadline) {}
            response.body = buffer.drain()
        }
        return response
    }

    /// Reads exactly `count` bytes (after an upgrade: the new protocol's).
    package func readBytes(_ count: Int, timeout: Double = 5) throws -> [UInt8] {
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
    package func waitForClose(timeout: Double) -> Bool {
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

    /// One request on a fresh connection with `Connection: close`, its
    /// response read within `timeout` seconds.
    package static func request(
        port: UInt16, _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = [],
        timeout: Double = 20
    ) throws -> LoopbackResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let connection = try LoopbackConnection(port: port)
        connection.sendWhileAccepted(Array((head + "\r\n").utf8) + body)
        return try connection.readResponse(timeout: timeout)
    }
}

extension Array {
    /// The elements, leaving the array empty.
    fileprivate mutating func drain() -> [Element] {
        defer { self = [] }
        return self
    }
}
