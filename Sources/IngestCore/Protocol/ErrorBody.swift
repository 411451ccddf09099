/// The body of every error answer (any status ≥ 400):
/// `{"error": "<what happened and what to do>", "error_code": "<code>"}`.
/// `error_code` is stable and machine-readable; `error` is for people.
///
/// ```swift
/// ErrorBody(message: "the access token expired; refresh it", code: "expired_token").jsonBody
/// // {"error":"the access token expired; refresh it","error_code":"expired_token"}
/// ```
///
/// Decoding is lenient, as a client must be with whatever an error page
/// holds: a member that is absent or not a string reads as "".
package struct ErrorBody: ProtocolBody, Hashable {
    /// What happened and what to do (`error`).
    package var message: String
    /// The stable code (`error_code`), e.g. `expired_token`.
    package var code: String

    /// Creates a body.
    package init(message: String, code: String) {
        self.message = message
        self.code = code
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        let object = try JSONObjectReader(json)
        message = JSONObjectReader.string(object["error"]) ?? ""
        code = JSONObjectReader.string(object["error_code"]) ?? ""
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        writer.key("error")
        writer.string(message)
        writer.key("error_code")
        writer.string(code)
        writer.endObject()
    }
}
