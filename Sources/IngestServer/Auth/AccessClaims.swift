/// The verified claims of a server-issued access token.
///
/// ```swift
/// let claims = try auth.verifyAccessToken(bearer, appId: "weather-abcde")
/// claims.userId    // the user's id (ObjectId hex)
/// ```
package struct AccessClaims: Sendable, Hashable {
    /// The user id (`sub`).
    package var userId: String
    /// The app the token is scoped to (`aud`).
    package var appId: String
    /// The device the session was started on (`did`).
    package var deviceId: String
    /// Issue time, seconds since 1970 (`iat`).
    package var issuedAt: Int64
    /// Expiry time, seconds since 1970 (`exp`).
    package var expiresAt: Int64

    package init(userId: String, appId: String, deviceId: String, issuedAt: Int64, expiresAt: Int64) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}
