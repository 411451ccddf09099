import IngestSupport

/// Issues and verifies the server's own access tokens: HS256 JWTs scoped to
/// one app, with a short lifetime.
///
/// Claims: `iss` ("dataingest"), `sub` (user id), `aud` (app id), `did`
/// (device id), `typ` ("access"), `iat`, `exp`.
///
/// ```swift
/// let codec = AccessTokenCodec(appId: "weather-abcde", secret: secret)
/// let token = codec.issue(userId: user, deviceId: device, now: now)
/// let claims = try codec.verify(token, now: now)
/// ```
package struct AccessTokenCodec: Sendable {
    /// The issuer claim the server writes and requires.
    package static let issuer = "dataingest"

    /// The app tokens are scoped to.
    package var appId: String
    /// The HMAC key.
    package var secret: [UInt8]
    /// Lifetime of new tokens in seconds. Default 1800 (30 minutes).
    package var lifetimeSeconds: Int64 = 1800
    /// Clock skew tolerated on `exp` and `iat`, in seconds. Default 30.
    package var leewaySeconds: Int64 = 30

    package init(appId: String, secret: [UInt8], lifetimeSeconds: Int64 = 1800, leewaySeconds: Int64 = 30) {
        self.appId = appId
        self.secret = secret
        self.lifetimeSeconds = lifetimeSeconds
        self.leewaySeconds = leewaySeconds
    }

    /// Issues a token for `userId` on `deviceId`, valid from `now` for ``lifetimeSeconds``.
    package func issue(userId: String, deviceId: String, now: Int64) -> String {
        let claims = JSONValue.object([
            .init("iss", .string(AccessTokenCodec.issuer)),
            .init("sub", .string(userId)),
            .init("aud", .string(appId)),
            .init("did", .string(deviceId)),
            .init("typ", .string("access")),
            .init("iat", .integer(now)),
            .init("exp", .integer(now + lifetimeSeconds)),
        ])
        return JWT.signHS256(claims: claims, secret: secret)
    }

    /// Verifies `token` for this codec's app at time `now` (seconds since 1970).
    ///
    /// Checks, in order: structure; `alg` is exactly `HS256` (so `none` and
    /// algorithm confusion are rejected); the signature (401 `invalid_token`
    /// for any token this app did not sign, whatever its claims say); the
    /// `aud` app scope (403, for a token signed with this app's secret for
    /// another app); the token type; `exp` and `iat` with ``leewaySeconds``.
    ///
    /// - Throws: ``AuthError`` `.invalidToken` (401), `.expiredToken` (401) or `.wrongApp` (403).
    package func verify(_ token: String, now: Int64) throws(AuthError) -> AccessClaims {
        let jwt = try JWT(parsing: token)
        guard jwt.algorithm == "HS256" else {
            throw AuthError(
                .invalidToken, "the access token uses alg \"\(jwt.algorithm)\"; only HS256 is accepted",
                appId: appId)
        }
        // The signature first: claims of a token this app did not sign say
        // nothing (a forged `aud` must not turn 401 into a permanent 403).
        guard jwt.hasValidHS256Signature(secret: secret) else {
            throw AuthError(.invalidToken, "the access token signature is invalid", appId: appId)
        }
        guard jwt.claims["aud"]?.stringValue == appId else {
            throw AuthError(.wrongApp, "the access token was issued for another app, not \(appId)", appId: appId)
        }
        guard jwt.claims["typ"]?.stringValue == "access", jwt.claims["iss"]?.stringValue == AccessTokenCodec.issuer else {
            throw AuthError(.invalidToken, "the token is not an access token", appId: appId)
        }
        guard let userId = jwt.claims["sub"]?.stringValue, !userId.isEmpty,
            let deviceId = jwt.claims["did"]?.stringValue,
            let issuedAt = jwt.numericDate("iat"), let expiresAt = jwt.numericDate("exp")
        else { throw AuthError(.invalidToken, "the access token lacks sub, did, iat or exp", appId: appId) }
        // Saturating: the claims are the sender's numbers (exp may be 2^63 - 1).
        guard now <= expiresAt.saturatingAdd(leewaySeconds) else {
            throw AuthError(.expiredToken, "the access token expired; refresh it with the refresh token", appId: appId)
        }
        guard issuedAt <= now.saturatingAdd(leewaySeconds) else {
            throw AuthError(.invalidToken, "the access token is issued in the future", appId: appId)
        }
        return AccessClaims(userId: userId, appId: appId, deviceId: deviceId, issuedAt: issuedAt, expiresAt: expiresAt)
    }
}
