import IngestSupport

/// The answer to a successful login, in the seed backend's shape.
///
/// ```swift
/// let response = try auth.login(appId: appId, provider: "anon-user", body: [])
/// httpResponse.body = response.jsonBody
/// // {"access_token":"…","refresh_token":"…","user_id":"…","device_id":"…"}
/// ```
package struct LoginResponse: Sendable, Hashable {
    /// A short-lived access token (JWT) for uploads.
    package var accessToken: String
    /// A long-lived refresh token to get new access tokens; only its hash is stored.
    package var refreshToken: String
    /// The user id.
    package var userId: String
    /// The device id of this session.
    package var deviceId: String

    package init(accessToken: String, refreshToken: String, userId: String, deviceId: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.userId = userId
        self.deviceId = deviceId
    }

    /// `{"access_token", "refresh_token", "user_id", "device_id"}` as JSON text.
    package var jsonBody: String {
        JSONValue.object([
            .init("access_token", .string(accessToken)), .init("refresh_token", .string(refreshToken)),
            .init("user_id", .string(userId)), .init("device_id", .string(deviceId)),
        ]).jsonText
    }
}

/// The answer to a session refresh (`POST /api/client/v2.0/auth/session`).
package struct SessionResponse: Sendable, Hashable {
    /// The new access token.
    package var accessToken: String
    /// The replacement refresh token when the app rotates refresh tokens; `nil` otherwise.
    package var refreshToken: String?

    package init(accessToken: String, refreshToken: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    /// `{"access_token"}` (plus `"refresh_token"` when rotated) as JSON text.
    package var jsonBody: String {
        var members: [JSONValue.Member] = [.init("access_token", .string(accessToken))]
        if let refreshToken { members.append(.init("refresh_token", .string(refreshToken))) }
        return JSONValue.object(members).jsonText
    }
}

/// A newly created API key: the only time the key itself is available.
package struct CreatedAPIKey: Sendable, Hashable {
    /// The secret key to give to the client (`{"key": "…"}` at the `api-key` login). Not stored.
    package var key: String
    /// The stored record (id, name, user).
    package var record: APIKeyRecord
}
