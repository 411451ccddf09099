/// The answer to one ``HTTPClientConnection/exchange(_:isHead:timeout:maxBodyBytes:)``,
/// and whether the connection can carry another request.
public struct HTTPClientResponse: Sendable {
    /// The status code (interim `1xx` answers are skipped).
    public var status: Int
    /// Header fields, names lowercased; repeated fields joined with ", ".
    public var headers: [String: String]
    /// The body, whatever its framing (`Content-Length`, chunked, or until close).
    public var body: [UInt8]
    /// Whether the connection may carry another request: HTTP/1.1 without
    /// `Connection: close` (or HTTP/1.0 with `keep-alive`), a body with a
    /// known end, and no stray bytes after it.
    public var keepAlive: Bool

    /// Creates a response.
    public init(status: Int, headers: [String: String], body: [UInt8], keepAlive: Bool) {
        self.status = status
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }
}
