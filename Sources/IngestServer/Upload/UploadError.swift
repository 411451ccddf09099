/// Why an upload request failed as a whole (nothing was written), with the
/// HTTP status, a stable `error_code` and whether to retry.
///
/// Per-object problems are not errors: they are reported in the upload
/// response's `rejected_objects` with a 200 status.
///
/// ```swift
/// throw UploadError(.badRequest, code: "malformed_gzip", "the body is not gzip: …")
/// ```
public struct UploadError: Error, Sendable, CustomStringConvertible {
    /// The HTTP status.
    public var status: HTTPStatus
    /// The stable machine-readable code (`error_code` in the JSON body).
    public var code: String
    /// What happened and what to do.
    public var message: String
    /// Seconds for `Retry-After` (429, 503), nil otherwise.
    public var retryAfterSeconds: Int?

    /// Creates an error.
    public init(_ status: HTTPStatus, code: String, _ message: String, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The response: `{"error": message, "error_code": code}`, plus `Retry-After` when set.
    public var response: HTTPResponse {
        var response = HTTPResponse.error(status, code: code, message: message)
        if let retryAfterSeconds { response.headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        return response
    }

    public var description: String { "UploadError(\(status.code) \(code)): \(message)" }
}
