/// Why an upload failed as a whole (nothing was written): its kind (what
/// the client can do), a stable `error_code` (Docs/Protocol.md, "Upload
/// errors") and, for `overloaded` and `unavailable`, when to retry.
///
/// Per-object problems are not errors: they are the ``UploadAnswer``'s
/// `rejectedObjects`, in a stored upload.
///
/// ```swift
/// throw UploadError(.invalidRequest, code: "malformed_gzip", "the body is not gzip: …")
/// ```
package struct UploadError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure (the HTTP adapter maps it to the status).
    package var kind: ServiceErrorKind
    /// The stable machine-readable code (`error_code` in the error body).
    package var code: String
    /// What happened and what to do.
    package var message: String
    /// Seconds after which a retry can succeed (`overloaded`, `unavailable`); nil otherwise.
    package var retryAfterSeconds: Int?

    /// Creates an error.
    package init(_ kind: ServiceErrorKind, code: String, _ message: String, retryAfterSeconds: Int? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    package var description: String { "UploadError(\(kind) \(code)): \(message)" }
}
