import IngestCore
import IngestSupport

/// A small blocking client for ClickHouse's HTTP interface (POST with the
/// query in the URL and data in the body), on IngestCore's
/// ``HTTPClientConnection`` (the socket client the sync transport uses too)
/// with keep-alive connections reused across calls.
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
// @unchecked Sendable: the pool is lock-protected and a connection is used by
// one call at a time; `timeoutSeconds` is set before the client is shared.
package final class ClickHouseClient: @unchecked Sendable {
    /// Host (name or address) and port of the server.
    package let host: String
    package let port: UInt16
    /// The URL without credentials, for messages.
    package let displayName: String
    /// Seconds a call may take (connect, send, each read). Default 60.
    package var timeoutSeconds: Double = 60
    private let credentials: String
    /// How connection messages name the server: `ClickHouse at http://host:port`.
    private let peer: String
    /// Idle keep-alive connections (one peer); the server's keep-alive timeout
    /// closes them, which the pool notices before reusing one.
    private let pool = HTTPClientPool(maxIdlePerName: 16, idleTimeout: .infinity)

    /// Parses `http://[user[:password]@]host[:port]` (port 8123 by default).
    ///
    /// - Throws: ``ClickHouseError`` `.usage` for another scheme or a bad URL.
    package init(url: String) throws(ClickHouseError) {
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
        peer = "ClickHouse at \(displayName)"
        var query = ""
        if !user.isEmpty { query += "&user=" + Self.percentEncoded(user) }
        if !password.isEmpty { query += "&password=" + Self.percentEncoded(password) }
        credentials = query
    }

    /// Closes the idle keep-alive connections (the client's `deinit` does too).
    package func closeIdle() {
        pool.closeAll()
    }

    /// A table sent along with a query (ClickHouse's "external data"): the
    /// query reads it by ``name``, e.g. `WHERE _id IN ids`. Much cheaper for
    /// ClickHouse than the same values as literals in the SQL text.
    package struct ExternalTable: Sendable {
        /// The name the query uses.
        package var name: String
        /// Its columns, e.g. `key FixedString(12)`.
        package var structure: String
        /// Its rows in TabSeparated format.
        package var rows: [UInt8]

        /// Creates an external table.
        package init(name: String, structure: String, rows: [UInt8]) {
            self.name = name
            self.structure = structure
            self.rows = rows
        }
    }

    /// Runs `sql` with `body` as its data (for `INSERT … FORMAT …`) and the
    /// given settings (e.g. `insert_distributed_sync=1`); returns the answer.
    @discardableResult
    package func execute(
        _ sql: String, body: [UInt8] = [], database: String? = nil,
        settings: [(String, String)] = []
    ) throws(ClickHouseError) -> [UInt8] {
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
    package func execute(
        _ sql: String, external table: ClickHouseClient.ExternalTable, database: String? = nil,
        settings: [(String, String)] = []
    ) throws(ClickHouseError) -> [UInt8] {
        // The rows are TabSeparated: escaped, so no CR and no "\r\n--" boundary inside.
        let boundary = "dataingest-external-data"
        var payload = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(table.name)\"; filename=\"\(table.name)\"\r\n".utf8)
        payload += Array("Content-Type: application/octet-stream\r\n\r\n".utf8)
        payload += table.rows
        payload += Array("\r\n--\(boundary)--\r\n".utf8)
        var parameters = [("query", sql), ("\(table.name)_structure", table.structure), ("\(table.name)_format", "TabSeparated")]
        if let database { parameters.append(("database", database)) }
        return try post(
            sql, parameters: parameters + settings, contentType: "multipart/form-data; boundary=\(boundary)",
            payload: payload)
    }

    private func post(
        _ sql: String, parameters: [(String, String)], contentType: String,
        payload: [UInt8]
    ) throws(ClickHouseError) -> [UInt8] {
        var target = "/?" + parameters.map { $0.0 + "=" + Self.percentEncoded($0.1) }.joined(separator: "&") + credentials
        if target.hasPrefix("/?&") { target = "/?" + target.dropFirst(3) }  // credentials only: no empty first parameter
        let request: [UInt8]
        do {
            request =
                try HTTPClientConnection.requestHead(
                    method: "POST", target: target, host: "\(host):\(port)",
                    headers: ["Content-Type": contentType], bodyCount: payload.count) + payload
        } catch {
            throw ClickHouseError(.usage, "the request for \(sql.prefix(80)) cannot be sent: \(error.message)")
        }
        // A reused connection may have been closed by the server meanwhile
        // (its keep-alive timeout): retry once on a new one. Statements sent
        // here are idempotent or deduplicated by the sink.
        if let reused = pool.takeIdle(peer) {
            do throws(ClickHouseError) {
                return try exchange(reused, request, sql)
            } catch  where error.code == .connection {
                // fall through to a fresh connection
            }
        }
        return try exchange(try connect(), request, sql)
    }

    /// ``execute(_:body:database:settings:)`` with the answer as UTF-8 text.
    package func query(_ sql: String, database: String? = nil) throws(ClickHouseError) -> String {
        String(decoding: try execute(sql, database: database), as: UTF8.self)
    }

    // MARK: - HTTP exchange

    private func exchange(_ connection: HTTPClientConnection, _ request: [UInt8], _ sql: String) throws(ClickHouseError) -> [UInt8] {
        let response: HTTPClientResponse
        do {
            response = try connection.exchange(request, timeout: timeoutSeconds)
        } catch {
            connection.close()
            throw ClickHouseError(error)
        }
        if response.keepAlive { pool.giveBack(connection) } else { connection.close() }
        guard response.status == 200 else {
            let text = String(decoding: response.body.prefix(2000), as: UTF8.self).trimmedLines
            // "Code: 60, e.displayText() = DB::Exception: Table … doesn't exist"
            var code: Int?
            if text.hasPrefix("Code: "), let comma = text.firstIndex(of: ",") {
                code = Int(text[text.index(text.startIndex, offsetBy: 6)..<comma])
            }
            throw ClickHouseError(
                .server, "ClickHouse at \(displayName) refused \(sql.prefix(80)): \(text)",
                serverCode: code, httpStatus: response.status)
        }
        return response.body
    }

    private func connect() throws(ClickHouseError) -> HTTPClientConnection {
        // An IPv6 literal resolves without its brackets.
        let address = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        do {
            return try HTTPClientConnection.connect(host: address, port: Int(port), name: peer, timeout: timeoutSeconds)
        } catch {
            throw ClickHouseError(error)
        }
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
    var trimmedLines: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " || last == "\r" { text.removeLast() }
        return String(text)
    }
}
