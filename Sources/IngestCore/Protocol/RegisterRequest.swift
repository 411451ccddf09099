/// The body of an email/password registration
/// (`POST …/auth/providers/local-userpass/register`): `{"email", "password"}`.
///
/// ```swift
/// RegisterRequest(email: "ada@example.com", password: "correct horse").jsonBody
/// ```
package struct RegisterRequest: ProtocolBody, Hashable {
    /// The email, the user's identity (compared case-insensitively).
    package var email: String
    /// The password (the app's policy sets its length).
    package var password: String

    /// Creates a body.
    package init(email: String, password: String) {
        self.email = email
        self.password = password
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        let object = try JSONObjectReader(json)
        email = try object.string("email")
        password = try object.string("password")
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        writer.key("email")
        writer.string(email)
        writer.key("password")
        writer.string(password)
        writer.endObject()
    }
}
