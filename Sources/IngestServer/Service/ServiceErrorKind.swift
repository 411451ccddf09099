/// What kind of failure a service reports, whatever front door carried the
/// request: the HTTP route adapters map it to a status (Routes/), another
/// protocol to its own error codes. The stable detail is the error's code
/// (`expired_token`, `malformed_segment`); the kind says what the client
/// can do about it.
///
/// ```swift
/// switch error.kind {
/// case .unauthenticated: refreshTheTokenAndRetry()
/// case .overloaded, .unavailable: retry(after: error.retryAfterSeconds ?? 1)
/// default: giveUp()
/// }
/// ```
package enum ServiceErrorKind: Sendable, Hashable {
    /// The request is malformed or against a policy: fix it (HTTP 400).
    case invalidRequest
    /// No valid credentials: log in or refresh the token, then retry (401).
    case unauthenticated
    /// The credentials do not allow this, for good (403).
    case forbidden
    /// The app (or provider) does not exist (404).
    case notFound
    /// What is being created exists already (409).
    case conflict
    /// The content exceeds a limit of the server (413).
    case tooLarge
    /// Too many requests right now: retry after the given delay (429).
    case overloaded
    /// The server failed: retry later with backoff (500).
    case failed
    /// A dependency (the sink) is busy or down: retry after the given delay (503).
    case unavailable

    /// The kind's number: the HTTP status the adapters answer with, which the
    /// status page's upload list and the metrics show whatever the front door.
    package var statusCode: Int {
        switch self {
        case .invalidRequest: 400
        case .unauthenticated: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .tooLarge: 413
        case .overloaded: 429
        case .failed: 500
        case .unavailable: 503
        }
    }
}
