/// The authentication providers, named as in the login URL
/// (`/api/client/v2.0/app/{appId}/auth/providers/{provider}/login`).
///
/// ```swift
/// AuthProvider(rawValue: "anon-user")   // .anonymous
/// ```
package enum AuthProvider: String, Sendable, Hashable, CaseIterable {
    /// Anonymous: every login creates a new user.
    case anonymous = "anon-user"
    /// Email and password; users register first.
    case userPassword = "local-userpass"
    /// A server API key created by `ingest-server apikey create`.
    case apiKey = "api-key"
    /// A JWT issued by a third party and verified with configured keys.
    case customToken = "custom-token"
}
