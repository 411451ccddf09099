/// The answer to a login (200):
/// `{"access_token", "refresh_token", "user_id", "device_id"}`.
///
/// ```swift
/// let answer = try LoginAnswer(jsonBody: response.body)
/// store(answer.accessToken, answer.refreshToken)
/// ```
package struct LoginAnswer: ProtocolBody, Hashable {
    /// A short-lived access token (JWT, HS256) for uploads.
    package var accessToken: String
    /// A long-lived, opaque refresh token to get new access tokens.
    package var refreshToken: String
    /// The user id (24 hex digits).
    package var userId: String
    /// The device id of this session (24 hex digits).
    package var deviceId: String

    /// Creates an answer.
    package init(accessToken: String, refreshToken: String, userId: String, deviceId: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.userId = userId
        self.deviceId = deviceId
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        let object = try JSONObjectReader(json)
        accessToken = try object.string("access_token")
        refreshToken = try object.string("refresh_token")
        userId = try object.string("user_id")
        deviceId = try object.string("device_id")
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        writer.key("access_token")
        writer.string(accessToken)
        writer.key("refresh_token")
        writer.string(refreshToken)
        writer.key("user_id")
        writer.string(userId)
        writer.key("device_id")
        writer.string(deviceId)
        writer.endObject()
    }
}
