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

    /// The login request's JSON body.
    func body(deviceId: String?) -> [String: Any] {
        var body: [String: Any]
        switch self {
        case .anonymous: body = [:]
        case .emailPassword(let email, let password): body = ["username": email, "password": password]
        case .userAPIKey(let key): body = ["key": key]
        case .jwt(let token): body = ["token": token]
        }
        if let deviceId { body["options"] = ["device": ["deviceId": deviceId]] }
        return body
    }
}
