/// The body of a login (`POST …/auth/providers/{provider}/login`): the
/// provider's credentials and, to keep a device id across logins,
/// `"options": {"device": {"deviceId": "<24 hex>"}}`.
///
/// | provider | members |
/// | --- | --- |
/// | `anon-user` | none (`{}`; the server also accepts an empty body) |
/// | `local-userpass` | `username` (an email; `email` is accepted too), `password` |
/// | `api-key` | `key` |
/// | `custom-token` | `token` (a JWT) |
///
/// ```swift
/// let body = LoginRequest(username: "ada@example.com", password: "correct horse", deviceId: nil).jsonBody
/// // {"username":"ada@example.com","password":"correct horse"}
/// ```
///
/// Decoding never fails on a member: one that is absent or not a string is
/// nil, and the server answers which one its provider needs.
package struct LoginRequest: ProtocolBody, Hashable {
    /// `local-userpass`: the email.
    package var username: String?
    /// `local-userpass`: the password.
    package var password: String?
    /// `api-key`: the API key (`dik_…`).
    package var key: String?
    /// `custom-token`: the JWT from the app's identity provider.
    package var token: String?
    /// The device id of an earlier login, to keep it.
    package var deviceId: String?

    /// Creates a body; leave the members the provider does not use nil.
    package init(
        username: String? = nil, password: String? = nil, key: String? = nil, token: String? = nil,
        deviceId: String? = nil
    ) {
        self.username = username
        self.password = password
        self.key = key
        self.token = token
        self.deviceId = deviceId
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        let object = try JSONObjectReader(json)
        username = JSONObjectReader.string(object["username"] ?? object["email"])
        password = JSONObjectReader.string(object["password"])
        key = JSONObjectReader.string(object["key"])
        token = JSONObjectReader.string(object["token"])
        let device = JSONObjectReader.member("device", of: object["options"])
        deviceId = JSONObjectReader.string(JSONObjectReader.member("deviceId", of: device))
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        if let username { writer.key("username"); writer.string(username) }
        if let password { writer.key("password"); writer.string(password) }
        if let key { writer.key("key"); writer.string(key) }
        if let token { writer.key("token"); writer.string(token) }
        if let deviceId {
            writer.key("options")
            writer.beginObject()
            writer.key("device")
            writer.beginObject()
            writer.key("deviceId")
            writer.string(deviceId)
            writer.endObject()
            writer.endObject()
        }
        writer.endObject()
    }
}
