/// The verified claims of a server-issued access token.
///
/// ```swift
/// let claims = try auth.verifyAccessToken(bearer, appId: "weather-abcde")
/// claims.userId    // the user's id (ObjectId hex)
/// ```
public struct AccessClaims: Sendable, Hashable {
    /// The user id (`sub`).
    public var userId: String
    /// The app the token is scoped to (`aud`).
    public var appId: String
    /// The device the session was started on (`did`).
    public var deviceId: String
    /// Issue time, seconds since 1970 (`iat`).
    public var issuedAt: Int64
    /// Expiry time, seconds since 1970 (`exp`).
    public var expiresAt: Int64

    public init(userId: String, appId: String, deviceId: String, issuedAt: Int64, expiresAt: Int64) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}
