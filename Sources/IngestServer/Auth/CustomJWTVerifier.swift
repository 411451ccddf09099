/// Verifies JWTs issued by a third party for the `custom-token` provider.
///
/// Accepts only `HS256` and `RS256`, and only with a configured key of that
/// algorithm, so `none` and algorithm confusion (an RS256 public key used as
/// an HS256 secret) are rejected. Requires `exp` and a non-empty `sub`;
/// checks `nbf`, `iat`, the lifetime, `aud` and `iss` when configured.
///
/// ```swift
/// let verifier = CustomJWTVerifier(settings: app.auth.customToken!)
/// let subject = try verifier.verify(token, now: now)   // the third party's user id
/// ```
package struct CustomJWTVerifier: Sendable {
    /// The accepted keys and claim rules.
    package var settings: CustomTokenSettings

    package init(settings: CustomTokenSettings) {
        self.settings = settings
    }

    /// Verifies `token` at `now` (seconds since 1970) and returns its `sub`.
    ///
    /// - Throws: ``AuthError`` `.invalidCredentials` (401) for a bad signature,
    ///   algorithm, audience, issuer or subject; `.expiredToken` (401) if
    ///   expired or not yet valid.
    package func verify(_ token: String, now: Int64) throws(AuthError) -> String {
        let jwt: JWT
        do {
            jwt = try JWT(parsing: token)
        } catch {
            throw AuthError(.invalidCredentials, "the custom token is malformed: \(error.message)")
        }
        guard jwt.algorithm == "HS256" || jwt.algorithm == "RS256" else {
            throw AuthError(.invalidCredentials, "the custom token uses alg \"\(jwt.algorithm)\"; only HS256 and RS256 are accepted")
        }
        var candidates = settings.keys.filter { $0.algorithm == jwt.algorithm }
        if let keyId = jwt.header["kid"]?.stringValue, candidates.contains(where: { $0.keyId == keyId }) {
            candidates = candidates.filter { $0.keyId == keyId }
        }
        guard !candidates.isEmpty else {
            throw AuthError(.invalidCredentials, "no \(jwt.algorithm) key is configured for custom tokens")
        }
        let signed = candidates.contains { key in
            switch key.material {
            case .hs256(let secret): jwt.hasValidHS256Signature(secret: secret)
            case .rs256(let publicKey): jwt.hasValidRS256Signature(key: publicKey)
            }
        }
        guard signed else { throw AuthError(.invalidCredentials, "the custom token signature is invalid") }

        let leeway = settings.leewaySeconds
        guard let expiresAt = jwt.numericDate("exp") else {
            throw AuthError(.invalidCredentials, "the custom token has no numeric exp claim")
        }
        // Saturating: the claims are the issuer's numbers (exp may be 2^63 - 1).
        guard now <= expiresAt.saturatingAdd(leeway) else {
            throw AuthError(.expiredToken, "the custom token expired; get a new one from its issuer")
        }
        if let notBefore = jwt.numericDate("nbf"), now.saturatingAdd(leeway) < notBefore {
            throw AuthError(.expiredToken, "the custom token is not valid yet (nbf)")
        }
        let issuedAt = jwt.numericDate("iat")
        if let issuedAt, issuedAt > now.saturatingAdd(leeway) {
            throw AuthError(.invalidCredentials, "the custom token is issued in the future (iat)")
        }
        guard expiresAt.saturatingSubtract(issuedAt ?? now) <= settings.maxLifetimeSeconds else {
            throw AuthError(
                .invalidCredentials,
                "the custom token lives longer than the \(settings.maxLifetimeSeconds) s this app accepts")
        }
        if !settings.audience.isEmpty {
            let audiences: [String]
            switch jwt.claims["aud"] {
            case .string(let value)?: audiences = [value]
            case .array(let values)?: audiences = values.compactMap(\.stringValue)
            default: audiences = []
            }
            guard audiences.contains(where: settings.audience.contains) else {
                throw AuthError(.invalidCredentials, "the custom token's audience is not one this app accepts")
            }
        }
        if let issuer = settings.issuer, jwt.claims["iss"]?.stringValue != issuer {
            throw AuthError(.invalidCredentials, "the custom token's issuer is not \(issuer)")
        }
        guard let subject = jwt.claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw AuthError(.invalidCredentials, "the custom token needs a sub claim (1-255 bytes) naming the user")
        }
        return subject
    }
}
