/// The answer to one ``HTTPClientConnection/exchange(_:isHead:timeout:maxBodyBytes:)``,
/// and whether the connection can carry another request.
package struct HTTPClientResponse: Sendable {
    /// The status code (interim `1xx` answers are skipped).
    package var status: Int
    /// Header fields, names lowercased; repeated fields joined with ", ".
    package var headers: [String: String]
    /// The body, whatever its framing (`Content-Length`, chunked, or until close).
    package var body: [UInt8]
    /// Whether the connection may carry another request: HTTP/1.1 without
    /// `Connection: close` (or HTTP/1.0 with `keep-alive`), a body with a
    /// known end, and no stray bytes after it.
    package var keepAlive: Bool

    /// Creates a response.
    package init(status: Int, headers: [String: String], body: [UInt8], keepAlive: Bool) {
        self.status = status
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }
}
