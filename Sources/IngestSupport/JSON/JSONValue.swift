/// A plain JSON value as written: object members keep their order (and,
/// unless the parser was told to reject them, duplicates), numbers keep
/// their exact text. The project's one JSON value: Extended JSON reads it
/// (IngestCore, ``BSON/init(extendedJSON:options:)``), the server's
/// configuration, login bodies and tokens are read from it and written with
/// it.
///
/// ```swift
/// let value = try JSONValue(parsing: #"{"b": 1.50, "a": [true, null]}"#, options: .strict())
/// if case .object(let members) = value { print(members.map(\.key)) }  // ["b", "a"]
/// value["b"]?.doubleValue                                               // 1.5
/// value.jsonText                                                        // {"b":1.50,"a":[true,null]}
/// ```
public enum JSONValue: Sendable, Hashable {
    /// An object; members in text order.
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

        /// `JSONValue.Member("alg", .string("HS256"))`.
        public init(_ key: String, _ value: JSONValue) {
            self.init(key: key, value: value)
        }
    }

    /// Compact JSON text: no whitespace, members in order, strings escaped
    /// as ``appendString(_:to:)`` does, numbers as written.
    public var jsonText: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the compact JSON text to `out`.
    package func write(to out: inout [UInt8]) {
        switch self {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendString(member.key, to: &out)
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
            Self.appendString(string, to: &out)
        case .number(let lexeme):
            out.append(contentsOf: lexeme.utf8)
        case .bool(let flag):
            out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null:
            out.append(contentsOf: "null".utf8)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string: `"` and `\` escaped, control characters as short
    /// escapes or `\u00XX`, everything else as UTF-8. Extended JSON writes
    /// its strings with it too.
    package static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
