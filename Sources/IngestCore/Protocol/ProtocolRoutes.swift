/// The paths of the wire protocol (Docs/Protocol.md), in one place: each
/// route as the pattern the server registers (`{name}` segments) and as a
/// builder the client calls.
///
/// ```swift
/// router.post(ProtocolRoutes.uploadPattern, upload)                      // server
/// let path = ProtocolRoutes.uploadPath(appId: "dev-k3v9x0qa")           // client
/// // "/api/client/v2.0/app/dev-k3v9x0qa/ingest"
/// ```
///
/// App ids are 1–64 characters from `A-Z a-z 0-9 - _` and provider names
/// are fixed words, so the builders insert them as they are.
package enum ProtocolRoutes {
    /// `POST`: log in with a provider; body ``LoginRequest``, answer ``LoginAnswer``.
    package static let loginPattern = "/api/client/v2.0/app/{appId}/auth/providers/{provider}/login"
    /// `POST`: register an email/password user; body ``RegisterRequest``, answer ``RegisterAnswer`` (201).
    package static let registerPattern = "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register"
    /// `POST` refreshes the access token (answer ``SessionAnswer``, 201),
    /// `DELETE` revokes the refresh token (204); both with
    /// `Authorization: Bearer <refresh_token>`.
    package static let sessionPath = "/api/client/v2.0/auth/session"
    /// `POST`: upload one sealed segment with `Authorization: Bearer
    /// <access_token>`; answer ``UploadAnswer``.
    package static let uploadPattern = "/api/client/v2.0/app/{appId}/ingest"
    /// `GET`: `{"status":"ok"}` while the server runs.
    package static let healthPath = "/healthz"
    /// `GET`: Prometheus text format 0.0.4.
    package static let metricsPath = "/metrics"
    /// `GET`: the HTML status page.
    package static let statusPagePath = "/"

    /// The login path of `provider` (`anon-user`, `local-userpass`, `api-key`, `custom-token`).
    package static func loginPath(appId: String, provider: String) -> String {
        "/api/client/v2.0/app/\(appId)/auth/providers/\(provider)/login"
    }

    /// The email/password registration path.
    package static func registerPath(appId: String) -> String {
        "/api/client/v2.0/app/\(appId)/auth/providers/local-userpass/register"
    }

    /// The upload path.
    package static func uploadPath(appId: String) -> String {
        "/api/client/v2.0/app/\(appId)/ingest"
    }
}
