/// A complete HTTP request as handed to a route handler: the head, the whole
/// body (already de-chunked) and the parameters the router extracted.
///
/// ```swift
/// router.get("/api/apps/{appId}") { request in
///     let appId = request.pathParameters["appId"] ?? ""
///     let verbose = request.queryParameter("verbose") == "1"
///     let token = request.headers["authorization"]
///     ...
/// }
/// ```
public struct HTTPRequest: Sendable {
    /// The method token, e.g. `GET`, exactly as sent (methods are case-sensitive).
    public var method: String
    /// The request target as sent on the request line, e.g. `/a/b?x=1`.
    public var target: String
    /// The path part of the target, still percent-encoded, e.g. `/a/b`.
    public var path: String
    /// The query part of the target without the `?`, or nil if there is none.
    public var query: String?
    /// The HTTP version of the request.
    public var version: HTTPVersion
    /// The header fields; look them up case-insensitively.
    public var headers: HTTPHeaders
    /// The body bytes (empty if the request has none).
    public var body: [UInt8]
    /// Values of the `{name}` segments of the matched route pattern, percent-decoded.
    public var pathParameters: [String: String]
    /// The route pattern that matched, e.g. `/app/{appId}/ingest` (nil before routing).
    public var routePattern: String?

    /// Creates a request (the server does this; tests and tools may too).
    public init(
        method: String, target: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = [:], body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        if let q = target.firstIndex(of: "?") {
            path = String(target[..<q])
            query = String(target[target.index(after: q)...])
        } else {
            path = target
            query = nil
        }
        self.version = version
        self.headers = headers
        self.body = body
        self.pathParameters = [:]
        self.routePattern = nil
    }

    /// The decoded `name=value` pairs of the query, in order (`+` is a space).
    public var queryParameters: [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecode(parts[0], plusAsSpace: true) ?? String(parts[0])
            let value = parts.count > 1 ? (percentDecode(parts[1], plusAsSpace: true) ?? String(parts[1])) : ""
            return (name, value)
        }
    }

    /// The decoded value of the first query parameter named `name`, or nil.
    public func queryParameter(_ name: String) -> String? {
        queryParameters.first { $0.name == name }?.value
    }
}

/// An HTTP protocol version (the server speaks 1.0 and 1.1).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// The major version digit.
    public var major: Int
    /// The minor version digit.
    public var minor: Int

    /// Creates a version.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: connections close after each response unless the client asks
    /// for `Connection: keep-alive`.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1: persistent connections by default.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public var description: String { "HTTP/\(major).\(minor)" }
}

/// Decodes `%XX` escapes (and `+` as space if asked); nil if an escape is
/// malformed or the result is not UTF-8.
func percentDecode<S: StringProtocol>(_ s: S, plusAsSpace: Bool = false) -> String? {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(s.utf8.count)
    var it = s.utf8.makeIterator()
    while let b = it.next() {
        if b == UInt8(ascii: "%") {
            guard let h = it.next(), let l = it.next(), let hv = hexValue(h), let lv = hexValue(l) else {
                return nil
            }
            bytes.append(hv << 4 | lv)
        } else if plusAsSpace && b == UInt8(ascii: "+") {
            bytes.append(UInt8(ascii: " "))
        } else {
            bytes.append(b)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

/// The value of one hexadecimal digit, or nil.
func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
    default: nil
    }
}
