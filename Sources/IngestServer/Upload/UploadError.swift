import IngestHTTP

/// Why an upload request failed as a whole (nothing was written), with the
/// HTTP status, a stable `error_code` and whether to retry.
///
/// Per-object problems are not errors: they are reported in the upload
/// response's `rejected_objects` with a 200 status.
///
/// ```swift
/// throw UploadError(.badRequest, code: "malformed_gzip", "the body is not gzip: …")
/// ```
package struct UploadError: Error, Sendable, CustomStringConvertible {
    /// The HTTP status.
    package var status: HTTPStatus
    /// The stable machine-readable code (`error_code` in the JSON body).
    package var code: String
    /// What happened and what to do.
    package var message: String
    /// Seconds for `Retry-After` (429, 503), nil otherwise.
    package var retryAfterSeconds: Int?

    /// Creates an error.
    package init(_ status: HTTPStatus, code: String, _ message: String, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The response: `{"error": message, "error_code": code}`, plus `Retry-After` when set.
    package var response: HTTPResponse {
        var response = HTTPResponse.error(status, code: code, message: message)
        if let retryAfterSeconds { response.headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        return response
    }

    package var description: String { "UploadError(\(status.code) \(code)): \(message)" }
}
