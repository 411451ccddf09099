/// A request or answer body that does not have the shape Docs/Protocol.md
/// defines: not JSON, not an object, a member missing or of the wrong type.
///
/// ```swift
/// do { _ = try LoginAnswer(jsonBody: response.body) }
/// catch where error.code == .missingMember { print(error.member ?? "") }   // "refresh_token"
/// ```
package struct ProtocolBodyError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The body is not UTF-8 JSON text.
        package static let invalidJSON = Code(rawValue: "invalid_json")
        /// The body (or a member that must be one) is not a JSON object.
        package static let notAnObject = Code(rawValue: "not_an_object")
        /// A required member is absent.
        package static let missingMember = Code(rawValue: "missing_member")
        /// A member has another JSON type, or a number out of range.
        package static let wrongType = Code(rawValue: "wrong_type")
    }

    /// What is wrong.
    package var code: Code
    /// The member concerned (`rejected_objects[2].reason`), if any.
    package var member: String?
    /// What happened, for people.
    package var message: String

    /// Creates an error.
    package init(_ code: Code, member: String? = nil, _ message: String) {
        self.code = code
        self.member = member
        self.message = message
    }

    package var description: String {
        member.map { "\($0): \(message)" } ?? message
    }
}
