import IngestHTTP

extension PresentedToken {
    /// Reads an `Authorization` header value: `Bearer <token>` (the scheme
    /// in any case, spaces and tabs around the token ignored); nil is
    /// ``missing``, another scheme ``malformed``.
    ///
    /// ```swift
    /// PresentedToken(authorization: "Bearer eyJ…")   // .bearer("eyJ…")
    /// PresentedToken(authorization: "Basic abc")     // .malformed
    /// ```
    package init(authorization header: String?) {
        guard let header else {
            self = .missing
            return
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            self = .malformed
            return
        }
        self = .bearer(String(parts[1].trimmingHTTPWhitespace()))
    }
}
