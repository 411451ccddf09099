/// The token a client presented with a request, as the front door found it:
/// none, something that is not a bearer token, or the token. The services
/// decide what each means (an upload without one answers `missing_token`).
///
/// ```swift
/// let token = PresentedToken(authorization: request.headers["authorization"])   // the HTTP adapter (Routes/)
/// let result = try uploads.upload(appId: appId, token: token, body: request.body)
/// ```
package enum PresentedToken: Sendable, Hashable {
    /// No token was sent.
    case missing
    /// Credentials were sent, but not as a bearer token (`Authorization: Basic …`).
    case malformed
    /// A bearer token.
    case bearer(String)
}
