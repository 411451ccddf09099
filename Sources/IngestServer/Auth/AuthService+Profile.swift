import IngestCore
import IngestSupport

/// The user an access token belongs to, as `GET /api/client/v2.0/auth/profile`
/// answers it (Realm SDKs read it after every login).
package struct UserProfile: Sendable, Hashable {
    /// The verified claims of the token.
    package var claims: AccessClaims
    /// The user.
    package var user: UserRecord

    /// The answer Realm clients accept: `user_id`, `domain_id`, `type`,
    /// one identity with its `provider_type`, and `data` (which the client
    /// requires; empty: this server keeps no profile data).
    ///
    /// ```json
    /// {"user_id":"…","domain_id":"<app>","type":"normal","identities":[{"id":"…","provider_type":"anon-user"}],"data":{}}
    /// ```
    package var jsonBody: [UInt8] {
        JSONValue.object([
            .init("user_id", .string(user.id)),
            .init("domain_id", .string(user.appId)),
            .init("type", .string("normal")),
            .init(
                "identities",
                .array([
                    .object([
                        .init("id", .string(user.identity ?? user.id)),
                        .init("provider_type", .string(user.provider)),
                    ])
                ])),
            .init("data", .object([])),
        ]).jsonText.utf8.map { $0 }
    }
}

extension AuthService {
    /// The profile of the user `accessToken` was issued to (any app of this
    /// server: the token's `aud` names it, its signature proves it).
    ///
    /// ```swift
    /// let profile = try auth.profile(accessToken: bearer)
    /// profile.user.provider   // "anon-user"
    /// ```
    ///
    /// - Throws: ``AuthError`` 401 `.invalidToken` (also for an app this
    ///   server does not have) or `.expiredToken`; 403 `.userDisabled`.
    package func profile(accessToken: String) throws(AuthError) -> UserProfile {
        let jwt = try JWT(parsing: accessToken)
        guard let appId = jwt.claims["aud"]?.stringValue, !appId.isEmpty else {
            throw AuthError(.invalidToken, "the access token names no app")
        }
        let claims: AccessClaims
        do {
            claims = try verifyAccessToken(accessToken, appId: appId)
        } catch  where error.code == .unknownApp {
            throw AuthError(.invalidToken, "the access token is not one this server issued")
        }
        let found: UserRecord?
        do {
            found = try store.user(id: claims.userId)
        } catch {
            throw AuthError(.internalError, "state database failure: \(error.message)", appId: appId)
        }
        guard let user = found, user.appId == appId else {
            throw AuthError(.invalidToken, "the access token's user no longer exists; log in again", appId: appId)
        }
        guard !user.isDisabled else { throw AuthError(.userDisabled, "this user is disabled", appId: appId) }
        return UserProfile(claims: claims, user: user)
    }
}
