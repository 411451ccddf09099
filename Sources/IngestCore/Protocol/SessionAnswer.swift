/// The answer to a token refresh (`POST /api/client/v2.0/auth/session`,
/// 201): `{"access_token"}`, plus `"refresh_token"` when the app rotates
/// refresh tokens (store it: the old one is revoked).
///
/// ```swift
/// let answer = try SessionAnswer(jsonBody: response.body)
/// if let rotated = answer.refreshToken { save(rotated) }
/// ```
package struct SessionAnswer: ProtocolBody, Hashable {
    /// The new access token.
    package var accessToken: String
    /// The replacement refresh token when the app rotates them; nil otherwise.
    package var refreshToken: String?

    /// Creates an answer.
    package init(accessToken: String, refreshToken: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        let object = try JSONObjectReader(json)
        accessToken = try object.string("access_token")
        refreshToken = try object.optionalString("refresh_token")
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        writer.key("access_token")
        writer.string(accessToken)
        if let refreshToken {
            writer.key("refresh_token")
            writer.string(refreshToken)
        }
        writer.endObject()
    }
}
