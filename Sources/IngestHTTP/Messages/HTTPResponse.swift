import IngestSupport

/// A complete HTTP response returned by a route handler.
///
/// The server adds `Content-Length` (from the body), `Connection` and `Date`;
/// a handler sets the rest.
///
/// ```swift
/// return .json(#"{"ok":true}"#)
/// return HTTPResponse(status: .created, headers: ["Location": "/x/1"])
/// return .error(.badRequest, code: "invalid_json", message: "The body is not JSON.")
/// ```
public struct HTTPResponse: Sendable {
    /// The status line's code and reason.
    public var status: HTTPStatus
    /// The header fields to send.
    public var headers: HTTPHeaders
    /// The body bytes (not sent for HEAD requests, 1xx, 204 and 304).
    public var body: [UInt8]

    /// Creates a response.
    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// An `application/json` response from already-encoded JSON text.
    public static func json(_ json: String, status: HTTPStatus = .ok) -> HTTPResponse {
        Self.json(Array(json.utf8), status: status)
    }

    /// An `application/json` response from already-encoded JSON bytes.
    public static func json(_ bytes: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: bytes)
    }

    /// The project's error shape: `{"error": message, "error_code": code}`.
    public static func error(_ status: HTTPStatus, code: String, message: String) -> HTTPResponse {
        var body: [UInt8] = []
        body.reserveCapacity(message.utf8.count + code.utf8.count + 28)
        body.append(contentsOf: #"{"error":"#.utf8)
        JSONString.append(message, to: &body)
        body.append(contentsOf: #","error_code":"#.utf8)
        JSONString.append(code, to: &body)
        body.append(UInt8(ascii: "}"))
        return json(body, status: status)
    }
}
