#if canImport(Glibc)
import Glibc
#endif
import IngestCore

/// A small blocking client for ClickHouse's HTTP interface (POST with the
/// query in the URL and data in the body), on POSIX sockets with
/// keep-alive connections reused across calls.
///
/// ```swift
/// let client = try ClickHouseClient(url: "http://default:secret@127.0.0.1:8123")
/// try client.execute("CREATE DATABASE IF NOT EXISTS weather")
/// try client.execute("INSERT INTO weather.t FORMAT TabSeparated", body: Array("1\tx\n".utf8))
/// let text = try client.query("SELECT count() FROM weather.t")   // "1\n"
/// ```
///
/// Plain `http://` only: put TLS in front of ClickHouse with a local proxy
/// (see Docs/Deployment.md) or keep it on a private network.
// @unchecked Sendable: `idle` is only touched while holding `lock`; a socket
// is used by one call at a time.
public final class ClickHouseClient: @unchecked Sendable {
    /// Host (name or address) and port of the server.
    public let host: String
    public let port: UInt16
    /// The URL without credentials, for messages.
    public let displayName: String
    /// Seconds a call may take (connect, send, each read). Default 60.
    public var timeoutSeconds: Double = 60
    private let credentials: String
    private let lock = Lock()
    private var idle: [Int32] = []
    private let maxIdle = 16

    /// Parses `http://[user[:password]@]host[:port]` (port 8123 by default).
    ///
    /// - Throws: ``ClickHouseError`` `.usage` for another scheme or a bad URL.
    public init(url: String) throws(ClickHouseError) {
        guard url.hasPrefix("http://") else {
            throw ClickHouseError(.usage, "the ClickHouse URL \(url) must start with http:// (its HTTP interface, port 8123 by default)")
        }
        var rest = Substring(url.dropFirst("http://".count))
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var user = "", password = ""
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = info.firstIndex(of: ":") {
                user = String(info[..<colon])
                password = String(info[info.index(after: colon)...])
            } else {
                user = String(info)
            }
        }
        var hostPart = String(rest), portNumber: UInt16 = 8123
        if let colon = rest.lastIndex(of: ":") {
            guard let parsed = UInt16(rest[rest.index(after: colon)...]) else {
                throw ClickHouseError(.usage, "the ClickHouse URL \(url) has an invalid port")
            }
            hostPart = String(rest[..<colon])
            portNumber = parsed
        }
        guard !hostPart.isEmpty else { throw ClickHouseError(.usage, "the ClickHouse URL \(url) has no host") }
        host = hostPart
        port = portNumber
        displayName = "http://\(hostPart):\(portNumber)"
        var query = ""
        if !user.isEmpty { query += "&user=" + Self.percentEncoded(user) }
        if !password.isEmpty { query += "&password=" + Self.percentEncoded(password) }
        credentials = query
    }

    deinit { closeIdle() }

    /// Closes the idle keep-alive connections.
    public func closeIdle() {
        let sockets = lock.withLock { () -> [Int32] in defer { idle.removeAll() }; return idle }
        for fd in sockets { Glibc.close(fd) }
    }

    /// A table sent along with a query (ClickHouse's "external data"): the
    /// query reads it by ``name``, e.g. `WHERE _id IN ids`. Much cheaper for
    /// ClickHouse than the same values as literals in the SQL text.
    public struct ExternalTable: Sendable {
        /// The name the query uses.
        public var name: String
        /// Its columns, e.g. `key FixedString(12)`.
        public var structure: String
        /// Its rows in TabSeparated format.
        public var rows: [UInt8]

        /// Creates an external table.
        public init(name: String, structure: String, rows: [UInt8]) {
            self.name = name
            self.structure = structure
            self.rows = rows
        }
    }

    /// Runs `sql` with `body` as its data (for `INSERT … FORMAT …`) and the
    /// given settings (e.g. `insert_distributed_sync=1`); returns the answer.
    @discardableResult
    public func execute(_ sql: String, body: [UInt8] = [], database: String? = nil,
                        settings: [(String, String)] = []) throws(ClickHouseError) -> [UInt8] {
        // Without data the statement travels as the body: the URL is limited
        // (16 KiB in ClickHouse 18.16's HTTP server). With data (an INSERT)
        // the statement stays in the URL and ClickHouse reads the data from the body.
        let payload = body.isEmpty ? Array(sql.utf8) : body
        var parameters = body.isEmpty ? [] : [("query", sql)]
        if let database { parameters.append(("database", database)) }
        return try post(sql, parameters: parameters + settings, contentType: "application/octet-stream", payload: payload)
    }

    /// Runs the query `sql`, which reads `table` (sent as multipart form
    /// data in the request body, TabSeparated); returns the answer.
    ///
    /// ```swift
    /// let ids = ClickHouseClient.ExternalTable(name: "ids", structure: "key Int64", rows: Array("1\n2\n".utf8))
    /// let found = try client.execute("SELECT id FROM weather.t WHERE id IN ids", external: ids)
    /// ```
    public func execute(_ sql: String, external table: ClickHouseClient.ExternalTable, database: String? = nil,
                        settings: [(String, String)] = []) throws(ClickHouseError) -> [UInt8] {
        // The rows are TabSeparated: escaped, so no CR and no "\r\n--" boundary inside.
        let boundary = "dataingest-external-data"
        var payload = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(table.name)\"; filename=\"\(table.name)\"\r\n".utf8)
        payload += Array("Content-Type: application/octet-stream\r\n\r\n".utf8)
        payload += table.rows
        payload += Array("\r\n--\(boundary)--\r\n".utf8)
        var parameters = [("query", sql), ("\(table.name)_structure", table.structure), ("\(table.name)_format", "TabSeparated")]
        if let database { parameters.append(("database", database)) }
        return try post(sql, parameters: parameters + settings, contentType: "multipart/form-data; boundary=\(boundary)",
                        payload: payload)
    }

    private func post(_ sql: String, parameters: [(String, String)], contentType: String,
                      payload: [UInt8]) throws(ClickHouseError) -> [UInt8] {
        var target = "/?" + parameters.map { $0.0 + "=" + Self.percentEncoded($0.1) }.joined(separator: "&") + credentials
        if target.hasPrefix("/?&") { target = "/?" + target.dropFirst(3) }   // credentials only: no empty first parameter
        var head = "POST \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Length: \(payload.count)\r\n"
        head += "Content-Type: \(contentType)\r\n\r\n"
        let request = Array(head.utf8) + payload
        // A reused connection may have been closed by the server meanwhile
        // (its keep-alive timeout): retry once on a new one. Statements sent
        // here are idempotent or deduplicated by the sink.
        let reused = lock.withLock { idle.popLast() }
        if let reused {
            do throws(ClickHouseError) {
                return try exchange(reused, request, sql)
            } catch where error.code == .connection {
                // fall through to a fresh connection
            }
        }
        return try exchange(try connect(), request, sql)
    }

    /// ``execute(_:body:database:settings:)`` with the answer as UTF-8 text.
    public func query(_ sql: String, database: String? = nil) throws(ClickHouseError) -> String {
        String(decoding: try execute(sql, database: database), as: UTF8.self)
    }

    // MARK: - HTTP exchange

    private func exchange(_ fd: Int32, _ request: [UInt8], _ sql: String) throws(ClickHouseError) -> [UInt8] {
        var keep = false
        defer {
            if keep && lock.withLock({ idle.count < maxIdle ? { idle.append(fd); return true }() : false }) {
                // kept for the next call
            } else {
                Glibc.close(fd)
            }
        }
        try sendAll(fd, request)
        let response = try readResponse(fd)
        keep = response.keepAlive
        guard response.status == 200 else {
            let text = String(decoding: response.body.prefix(2000), as: UTF8.self).trimmedLines
            // "Code: 60, e.displayText() = DB::Exception: Table … doesn't exist"
            var code: Int?
            if text.hasPrefix("Code: "), let comma = text.firstIndex(of: ",") {
                code = Int(text[text.index(text.startIndex, offsetBy: 6)..<comma])
            }
            throw ClickHouseError(.server, "ClickHouse at \(displayName) refused \(sql.prefix(80)): \(text)",
                                  serverCode: code, httpStatus: response.status)
        }
        return response.body
    }

    private func connect() throws(ClickHouseError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw ClickHouseError(.connection, "cannot resolve the ClickHouse host \(host)")
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastErrno = errno; continue }
            var timeout = timeval(tv_sec: Int(timeoutSeconds), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastErrno = errno
            Glibc.close(fd)
        }
        throw ClickHouseError(.connection, "cannot connect to ClickHouse at \(displayName): \(String(cString: strerror(lastErrno))); "
                              + "check that it runs and listens there")
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws(ClickHouseError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw ClickHouseError(.connection, "sending to ClickHouse at \(displayName) failed: \(String(cString: strerror(errno)))")
            }
            sent += n
        }
    }

    private struct Response {
        var status: Int
        var keepAlive: Bool
        var body: [UInt8]
    }

    /// Reads one response: status line, headers, then a `Content-Length`,
    /// chunked or until-close body.
    private func readResponse(_ fd: Int32) throws(ClickHouseError) -> Response {
        var buffer: [UInt8] = []
        var scanned = 0
        var headEnd = -1
        while headEnd < 0 {
            try fill(fd, &buffer, allowEOF: false)
            while scanned + 3 < buffer.count {
                if buffer[scanned] == 13 && buffer[scanned + 1] == 10 && buffer[scanned + 2] == 13 && buffer[scanned + 3] == 10 {
                    headEnd = scanned
                    break
                }
                scanned += 1
            }
            if buffer.count > 1 << 20 { throw ClickHouseError(.protocolError, "ClickHouse sent an oversized response head") }
        }
        let lines = String(decoding: buffer[..<headEnd], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw ClickHouseError(.protocolError, "ClickHouse at \(displayName) sent an invalid status line")
        }
        var length: Int?
        var chunked = false
        var keepAlive = statusParts[0] == "HTTP/1.1"
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces.lowercased()
            if name == "content-length" { length = Int(value) }
            if name == "transfer-encoding" && value.contains("chunked") { chunked = true }
            if name == "connection" { keepAlive = value == "keep-alive" || (keepAlive && value != "close") }
        }
        var rest = Array(buffer[(headEnd + 4)...])
        var body: [UInt8] = []
        if chunked {
            var position = 0
            while true {
                // Chunk size line.
                var lineEnd = -1
                while lineEnd < 0 {
                    if let index = Self.crlf(in: rest, from: position) { lineEnd = index } else { try fill(fd, &rest, allowEOF: false) }
                }
                let sizeText = String(decoding: rest[position..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(sizeText.trimmingSpaces, radix: 16) else {
                    throw ClickHouseError(.protocolError, "ClickHouse at \(displayName) sent an invalid chunk size")
                }
                position = lineEnd + 2
                if size == 0 {
                    // Trailers end with an empty line.
                    while Self.crlf(in: rest, from: position) == nil { try fill(fd, &rest, allowEOF: false) }
                    break
                }
                while rest.count < position + size + 2 { try fill(fd, &rest, allowEOF: false) }
                body.append(contentsOf: rest[position..<(position + size)])
                position += size + 2
            }
        } else if let length {
            while rest.count < length { try fill(fd, &rest, allowEOF: false) }
            body = Array(rest.prefix(length))
        } else {
            keepAlive = false
            while try fill(fd, &rest, allowEOF: true) {}
            body = rest
        }
        return Response(status: status, keepAlive: keepAlive, body: body)
    }

    /// Appends what the socket has; returns false at EOF (if allowed).
    @discardableResult
    private func fill(_ fd: Int32, _ buffer: inout [UInt8], allowEOF: Bool) throws(ClickHouseError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n == 0 && allowEOF { return false }
            let reason = n == 0 ? "the connection closed" : String(cString: strerror(errno))
            throw ClickHouseError(.connection, "reading from ClickHouse at \(displayName) failed: \(reason)")
        }
    }

    private static func crlf(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }

    /// Percent-encodes everything but unreserved characters.
    static func percentEncoded(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%")); out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private extension StringProtocol {
    var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return String(text)
    }

    var trimmedLines: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " || last == "\r" { text.removeLast() }
        return String(text)
    }
}
