#if canImport(Glibc)
import Glibc
#endif

/// Serializes responses into the bytes sent on the wire.
enum HTTPResponseWriter {
    /// The interim response sent for `Expect: 100-continue`.
    static let continueBytes: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Appends `response` to `out`.
    ///
    /// - Parameters:
    ///   - isHead: the request was HEAD: send the headers (with the body's
    ///     length) but not the body.
    ///   - close: add `Connection: close` (the connection closes after this).
    ///   - http10KeepAlive: the client is HTTP/1.0 and the connection stays
    ///     open, which it must be told with `Connection: keep-alive`.
    ///   - upgrade: the response switches protocols (101): `Connection: Upgrade`.
    static func write(
        _ response: HTTPResponse, isHead: Bool, close: Bool, http10KeepAlive: Bool, upgrade: Bool = false,
        date: String, into out: inout [UInt8]
    ) {
        let status = response.status
        out.append(contentsOf: "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n".utf8)
        for field in response.headers {
            // The server owns framing and connection management.
            if asciiCaseInsensitiveEquals(field.name, "content-length")
                || asciiCaseInsensitiveEquals(field.name, "transfer-encoding")
                || asciiCaseInsensitiveEquals(field.name, "connection")
                || asciiCaseInsensitiveEquals(field.name, "date")
            {
                continue
            }
            // Never let a handler's value split the response (header injection).
            let name = field.name.utf8.allSatisfy(isTokenChar) ? field.name : "X-Invalid-Header-Name"
            var value = field.value
            if value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                // Bytewise: "\r\n" is one Character, so a Character map would miss it.
                value = String(decoding: value.utf8.map { ($0 == 13 || $0 == 10 || $0 == 0) ? 32 : $0 }, as: UTF8.self)
            }
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "Date: \(date)\r\n".utf8)
        if !status.forbidsBody {
            out.append(contentsOf: "Content-Length: \(response.body.count)\r\n".utf8)
        }
        if upgrade {
            out.append(contentsOf: "Connection: Upgrade\r\n".utf8)
        } else if close {
            out.append(contentsOf: "Connection: close\r\n".utf8)
        } else if http10KeepAlive {
            out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        if !isHead && !status.forbidsBody {
            out.append(contentsOf: response.body)
        }
    }

    /// The current time as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(epochSeconds: Int) -> String {
        var t = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
