/// A strict RFC 8259 JSON parser over UTF-8 bytes that keeps object member
/// order and number lexemes. Recursive, bounded by `maxDepth`.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private let maxDepth: Int

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    static func parse(_ text: String, maxDepth: Int) throws(ExtendedJSONError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { buffer -> Result<JSONValue, ExtendedJSONError> in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            do throws(ExtendedJSONError) {
                parser.skipWhitespace()
                let value = try parser.parseValue(depth: 0)
                parser.skipWhitespace()
                guard parser.position == buffer.count else {
                    throw parser.syntaxError("unexpected text after the JSON value")
                }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func syntaxError(_ message: String) -> ExtendedJSONError {
        ExtendedJSONError(code: .syntax, offset: position, message: message)
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(ExtendedJSONError) {
        guard current == byte else { throw syntaxError("expected \(what)") }
        position += 1
    }

    private mutating func parseValue(depth: Int) throws(ExtendedJSONError) -> JSONValue {
        guard let byte = current else { throw syntaxError("unexpected end of the text; expected a value") }
        switch byte {
        case UInt8(ascii: "{"):
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        case UInt8(ascii: "t"):
            try parseLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try parseLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try parseLiteral("null")
            return .null
        default:
            throw syntaxError("unexpected character; expected a value")
        }
    }

    private mutating func parseLiteral(_ word: StaticString) throws(ExtendedJSONError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count else { throw syntaxError("unexpected end of the text") }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for offset in 0..<count where bytes[position + offset] != expected[offset] {
            throw syntaxError("invalid literal; expected '\(word)'")
        }
        position += count
    }

    private mutating func parseObject(depth: Int) throws(ExtendedJSONError) -> JSONValue {
        guard depth <= maxDepth else {
            throw ExtendedJSONError(code: .depthLimitExceeded, offset: position,
                                    message: "objects and arrays are nested deeper than \(maxDepth)")
        }
        position += 1  // {
        var members: [JSONValue.Member] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw syntaxError("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "':' after the key")
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONValue.Member(key: key, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(members)
            default: throw syntaxError("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(ExtendedJSONError) -> JSONValue {
        guard depth <= maxDepth else {
            throw ExtendedJSONError(code: .depthLimitExceeded, offset: position,
                                    message: "objects and arrays are nested deeper than \(maxDepth)")
        }
        position += 1  // [
        var values: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            values.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return .array(values)
            default: throw syntaxError("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func parseNumber() throws(ExtendedJSONError) -> String {
        let start = position
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, isDigit(first) else { throw syntaxError("a number needs a digit") }
        position += 1
        if first != UInt8(ascii: "0") {
            while let byte = current, isDigit(byte) { position += 1 }
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard let byte = current, isDigit(byte) else { throw syntaxError("a fraction needs a digit") }
            while let byte = current, isDigit(byte) { position += 1 }
        }
        if let byte = current, byte | 0x20 == UInt8(ascii: "e") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let byte = current, isDigit(byte) else { throw syntaxError("an exponent needs a digit") }
            while let byte = current, isDigit(byte) { position += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func parseString() throws(ExtendedJSONError) -> String {
        position += 1  // opening quote
        let start = position
        // Fast path: no escapes. The input came from a Swift String, so any
        // run between ASCII delimiters is valid UTF-8.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                position += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw syntaxError("a control character must be escaped in a string") }
            position += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while true {
            guard position < bytes.count else { throw syntaxError("unterminated string") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                position += 1
                guard let escape = current else { throw syntaxError("unterminated escape") }
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A high surrogate must be followed by \u and a low one.
                        guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"),
                              bytes[position + 1] == UInt8(ascii: "u") else {
                            throw syntaxError("unpaired UTF-16 surrogate in a \\u escape")
                        }
                        position += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw syntaxError("unpaired UTF-16 surrogate in a \\u escape")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw syntaxError("unpaired UTF-16 surrogate in a \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw syntaxError("invalid \\u escape") }
                    out.append(contentsOf: Character(unicode).utf8)
                default:
                    throw syntaxError("invalid escape in a string")
                }
            default:
                if byte < 0x20 { throw syntaxError("a control character must be escaped in a string") }
                out.append(byte)
                position += 1
            }
        }
    }

    private mutating func parseHex4() throws(ExtendedJSONError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw syntaxError("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw syntaxError("a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt32(nibble)
            position += 1
        }
        return value
    }
}
