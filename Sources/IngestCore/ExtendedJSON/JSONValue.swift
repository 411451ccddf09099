/// A plain JSON value as written: object members keep their order (and
/// duplicates), numbers keep their exact text. This is the layer below
/// Extended JSON; ``BSON/init(extendedJSON:options:)`` interprets it.
///
/// ```swift
/// let value = try JSONValue(parsing: #"{"b": 1.50, "a": [true, null]}"#)
/// if case .object(let members) = value { print(members.map(\.key)) }  // ["b", "a"]
/// ```
public enum JSONValue: Sendable, Hashable {
    /// An object; members in text order, duplicates kept.
    case object([Member])
    /// An array.
    case array([JSONValue])
    /// A string, unescaped.
    case string(String)
    /// A number, as its exact text (`"1.50"`, `"-0"`, `"1E+3"`).
    case number(String)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    /// One key and its value in an object.
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// Parses JSON text (RFC 8259, UTF-8), with objects and arrays nested at
    /// most `maxDepth` deep (at most
    /// ``ExtendedJSONParsingOptions/depthCeiling``).
    ///
    /// Throws ``ExtendedJSONError`` with code `.syntax` (and the byte
    /// offset) or `.depthLimitExceeded`.
    public init(parsing text: String, maxDepth: Int = 200) throws(ExtendedJSONError) {
        self = try JSONParser.parse(text, maxDepth: min(maxDepth, ExtendedJSONParsingOptions.depthCeiling))
    }

    /// Compact JSON text: no whitespace, members in order, strings escaped
    /// as ``BSONDocument/extendedJSON(_:)`` escapes them, numbers as written.
    public var jsonText: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                ExtendedJSONWriter.appendString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .string(let string):
            ExtendedJSONWriter.appendString(string, to: &out)
        case .number(let lexeme):
            out.append(contentsOf: lexeme.utf8)
        case .bool(let flag):
            out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null:
            out.append(contentsOf: "null".utf8)
        }
    }
}
