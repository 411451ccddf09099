import IngestCore

/// How a user logs in, as in the seed SDK.
///
/// ```swift
/// let user = try await app.login(credentials: .anonymous)
/// let ada = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "correct horse"))
/// let device = try await app.login(credentials: .userAPIKey("dik_…"))
/// let sso = try await app.login(credentials: .jwt(token: idToken))
/// ```
public enum Credentials: Sendable, Hashable {
    /// An anonymous user (provider `anon-user`). While an anonymous user is
    /// logged in, or logged out with data still pending, logging in
    /// anonymously again returns that user.
    case anonymous
    /// A registered email and password (provider `local-userpass`); register
    /// first with ``EmailPasswordAuth/registerUser(email:password:)``.
    case emailPassword(email: String, password: String)
    /// An API key created with `ingest-server apikey create` (provider `api-key`).
    case userAPIKey(String)
    /// A JWT from the app's identity provider (provider `custom-token`).
    case jwt(token: String)

    /// The server's provider name.
    var provider: String {
        switch self {
        case .anonymous: "anon-user"
        case .emailPassword: "local-userpass"
        case .userAPIKey: "api-key"
        case .jwt: "custom-token"
        }
    }

    /// The login request's body.
    func loginRequest(deviceId: String?) -> LoginRequest {
        switch self {
        case .anonymous: LoginRequest(deviceId: deviceId)
        case .emailPassword(let email, let password): LoginRequest(username: email, password: password, deviceId: deviceId)
        case .userAPIKey(let key): LoginRequest(key: key, deviceId: deviceId)
        case .jwt(let token): LoginRequest(token: token, deviceId: deviceId)
        }
    }
}
