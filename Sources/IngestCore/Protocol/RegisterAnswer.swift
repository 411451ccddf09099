/// The answer to a registration (201): `{"user_id": "<24 hex>"}`.
///
/// ```swift
/// let userId = try RegisterAnswer(jsonBody: response.body).userId
/// ```
package struct RegisterAnswer: ProtocolBody, Hashable {
    /// The new user's id.
    package var userId: String

    /// Creates an answer.
    package init(userId: String) {
        self.userId = userId
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        userId = try JSONObjectReader(json).string("user_id")
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        writer.key("user_id")
        writer.string(userId)
        writer.endObject()
    }
}
