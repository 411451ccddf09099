/// One app served by the ingest server: its id, auth providers, token
/// settings, schema, development mode and sink.
///
/// ```swift
/// var app = AppConfiguration(id: "weather-abcde")
/// app.auth.anonymous = AnonymousSettings()
/// app.developmentMode = true
/// ```
package struct AppConfiguration: Sendable {
    /// The app id clients put in URLs: 1–64 characters from `A-Z a-z 0-9 - _`.
    package var id: String
    /// The enabled auth providers. Default: none (no one can log in).
    package var auth: AuthConfiguration = .init()
    /// The HMAC key for access tokens (at least 32 bytes). Default `nil`: the
    /// server generates one and keeps it in its state database, so tokens
    /// survive restarts. Set it explicitly when several servers share an app.
    package var signingSecret: [UInt8]? = nil
    /// Access token lifetime in seconds. Default 1800 (30 minutes).
    package var accessTokenLifetimeSeconds: Int64 = 1800
    /// Refresh token lifetime in seconds. Default 5 184 000 (60 days).
    package var refreshTokenLifetimeSeconds: Int64 = 60 * 86_400
    /// Whether a refresh also replaces the refresh token (the old one is
    /// revoked). Default `false`, as in the seed's backend.
    package var rotateRefreshTokens: Bool = false
    /// Development mode: the server accepts new collections and new fields
    /// sent by clients and adds them to the schema (additive only). Default `false`.
    package var developmentMode: Bool = false
    /// The collections that accept data and the shape of their objects. Default: empty.
    package var schema: ConfigSchema = .init()
    /// Where accepted objects go. Default: SQLite file `<id>.sqlite` in the state directory.
    package var sink: SinkConfiguration

    package init(
        id: String, auth: AuthConfiguration = .init(), signingSecret: [UInt8]? = nil,
        accessTokenLifetimeSeconds: Int64 = 1800, refreshTokenLifetimeSeconds: Int64 = 60 * 86_400,
        rotateRefreshTokens: Bool = false, developmentMode: Bool = false, schema: ConfigSchema = .init(),
        sink: SinkConfiguration? = nil
    ) {
        self.id = id
        self.auth = auth
        self.signingSecret = signingSecret
        self.accessTokenLifetimeSeconds = accessTokenLifetimeSeconds
        self.refreshTokenLifetimeSeconds = refreshTokenLifetimeSeconds
        self.rotateRefreshTokens = rotateRefreshTokens
        self.developmentMode = developmentMode
        self.schema = schema
        self.sink = sink ?? .sqlite(path: "\(id).sqlite")
    }

    /// Whether `id` is an acceptable app id.
    package static func isValidId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == 0x2D || byte == 0x5F
            }
    }
}
