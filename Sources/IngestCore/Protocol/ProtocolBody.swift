import IngestSupport

/// A JSON body of the wire protocol (Docs/Protocol.md): the client and the
/// server encode and decode it with this same code. Encoding writes compact
/// JSON, members in the documented order; decoding reads a parsed
/// ``JSONValue`` and ignores members it does not know (so a newer peer may
/// add some).
///
/// ```swift
/// let bytes = LoginAnswer(accessToken: a, refreshToken: r, userId: u, deviceId: d).jsonBody
/// let answer = try LoginAnswer(jsonBody: bytes)
/// ```
package protocol ProtocolBody: Sendable {
    /// Decodes the body from a parsed JSON value.
    init(json: JSONValue) throws(ProtocolBodyError)
    /// Writes the body.
    func encode(to writer: inout JSONBodyWriter)
}

extension ProtocolBody {
    /// The body's JSON bytes, as sent on the wire.
    package var jsonBody: [UInt8] {
        var writer = JSONBodyWriter()
        encode(to: &writer)
        return writer.bytes
    }

    /// Parses and decodes UTF-8 JSON bytes (a `[UInt8]` or a `Data`).
    package init<Bytes: Collection>(jsonBody bytes: Bytes) throws(ProtocolBodyError) where Bytes.Element == UInt8 {
        let text: String
        if let array = bytes as? [UInt8] {
            guard let valid = String(validating: array, as: UTF8.self) else {
                throw ProtocolBodyError(.invalidJSON, "the body is not UTF-8 text")
            }
            text = valid
        } else {
            guard let valid = String(validating: Array(bytes), as: UTF8.self) else {
                throw ProtocolBodyError(.invalidJSON, "the body is not UTF-8 text")
            }
            text = valid
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text, maxDepth: 32)
        } catch {
            throw ProtocolBodyError(.invalidJSON, "the body is not JSON: \(error)")
        }
        try self.init(json: value)
    }
}

/// Reads the members of one JSON object for a body's decoder, with errors
/// that name the member. The first of repeated keys counts.
struct JSONObjectReader {
    let members: [JSONValue.Member]
    /// Where this object is in the body (`rejected_objects[2]`), for errors.
    let path: String?

    init(_ value: JSONValue, path: String? = nil) throws(ProtocolBodyError) {
        guard case .object(let members) = value else {
            throw ProtocolBodyError(.notAnObject, member: path, "expected a JSON object")
        }
        self.members = members
        self.path = path
    }

    func name(_ key: String) -> String { path.map { "\($0).\(key)" } ?? key }

    /// The member's value; nil when absent.
    subscript(key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    /// A required string member.
    func string(_ key: String) throws(ProtocolBodyError) -> String {
        guard let value = self[key] else { throw ProtocolBodyError(.missingMember, member: name(key), "missing") }
        guard case .string(let text) = value else { throw ProtocolBodyError(.wrongType, member: name(key), "expected a string") }
        return text
    }

    /// A string member that may be absent or null.
    func optionalString(_ key: String) throws(ProtocolBodyError) -> String? {
        switch self[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw ProtocolBodyError(.wrongType, member: name(key), "expected a string")
        }
    }

    /// A required integer member that fits `T`.
    func integer<T: FixedWidthInteger>(_ key: String, as type: T.Type = T.self) throws(ProtocolBodyError) -> T {
        guard let value = self[key] else { throw ProtocolBodyError(.missingMember, member: name(key), "missing") }
        guard case .number(let lexeme) = value, let number = T(lexeme) else {
            throw ProtocolBodyError(.wrongType, member: name(key), "expected an integer in the range of \(T.self)")
        }
        return number
    }

    /// `value`'s member `key` if `value` is an object (lenient lookups of
    /// optional nested members); nil otherwise.
    static func member(_ key: String, of value: JSONValue?) -> JSONValue? {
        guard case .object(let members)? = value else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// `value` if it is a string; nil otherwise.
    static func string(_ value: JSONValue?) -> String? {
        guard case .string(let text)? = value else { return nil }
        return text
    }

    /// A required array member.
    func array(_ key: String) throws(ProtocolBodyError) -> [JSONValue] {
        guard let value = self[key] else { throw ProtocolBodyError(.missingMember, member: name(key), "missing") }
        guard case .array(let elements) = value else { throw ProtocolBodyError(.wrongType, member: name(key), "expected an array") }
        return elements
    }
}
