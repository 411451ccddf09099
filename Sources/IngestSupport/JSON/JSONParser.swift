/// What the JSON parser accepts beyond RFC 8259's grammar, each with its default.
///
/// ```swift
/// let config = try JSONValue(parsing: bytes, options: .strict())           // configuration files
/// let body = try JSONValue(parsing: bytes, options: .strict(maxDepth: 16)) // login bodies
/// ```
package struct JSONParsingOptions: Sendable, Hashable {
    /// What to do with a key an object already has.
    package enum DuplicateKeys: Sendable, Hashable {
        /// Keep every member, in order (Extended JSON: the BSON document
        /// keeps them too).
        case keep
        /// Fail with ``JSONSyntaxError/Code/duplicateKey`` (configuration,
        /// tokens: a value must not be read two ways).
        case reject
    }

    /// The deepest nesting of objects and arrays accepted (`[[]]` is 2).
    /// Parsing recurses on the calling thread's stack: keep it in the
    /// hundreds. Default 200.
    package var maxDepth: Int = 200
    /// Default ``DuplicateKeys/keep``.
    package var duplicateKeys: DuplicateKeys = .keep
    /// Whether a UTF-8 byte order mark (which some editors write) before
    /// the value is skipped. Default false: it is an unexpected character.
    package var allowsByteOrderMark = false

    package init(maxDepth: Int = 200, duplicateKeys: DuplicateKeys = .keep, allowsByteOrderMark: Bool = false) {
        self.maxDepth = maxDepth
        self.duplicateKeys = duplicateKeys
        self.allowsByteOrderMark = allowsByteOrderMark
    }

    /// For configuration files and protocol bodies: duplicate keys
    /// rejected, a byte order mark skipped, nesting at most `maxDepth`.
    package static func strict(maxDepth: Int = 64) -> JSONParsingOptions {
        JSONParsingOptions(maxDepth: maxDepth, duplicateKeys: .reject, allowsByteOrderMark: true)
    }
}

extension JSONValue {
    /// Parses JSON text (RFC 8259) as `options` say.
    ///
    /// - Throws: ``JSONSyntaxError`` with the byte offset, line and column.
    package init(parsing text: String, options: JSONParsingOptions) throws(JSONSyntaxError) {
        var text = text
        // A String is valid UTF-8 already: strings need no validation.
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONSyntaxError) in
                try JSONParser.parse(buffer, options: options, validatesUTF8: false)
            }
        }
        self = try result.get()
    }

    /// Parses UTF-8 JSON bytes as `options` say; strings must be valid UTF-8.
    ///
    /// - Throws: ``JSONSyntaxError`` with the byte offset, line and column.
    package init(parsing bytes: [UInt8], options: JSONParsingOptions) throws(JSONSyntaxError) {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONSyntaxError) in
                try JSONParser.parse(buffer, options: options, validatesUTF8: true)
            }
        }
        self = try result.get()
    }
}

/// The strict RFC 8259 parser over UTF-8 bytes behind
/// ``JSONValue/init(parsing:options:)-(String,_)``: keeps member order and
/// number lexemes, recursive, bounded by ``JSONParsingOptions/maxDepth``.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private let maxDepth: Int
    private let rejectsDuplicateKeys: Bool
    private let validatesUTF8: Bool

    private init(bytes: UnsafeBufferPointer<UInt8>, options: JSONParsingOptions, validatesUTF8: Bool) {
        self.bytes = bytes
        self.maxDepth = options.maxDepth
        self.rejectsDuplicateKeys = options.duplicateKeys == .reject
        self.validatesUTF8 = validatesUTF8
    }

    static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, options: JSONParsingOptions,
        validatesUTF8: Bool
    ) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, options: options, validatesUTF8: validatesUTF8)
        if options.allowsByteOrderMark, bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            parser.position = 3
        }
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error(.trailingText) }
        return value
    }

    private func error(_ reason: JSONSyntaxError.Reason, at offset: Int? = nil) -> JSONSyntaxError {
        let offset = offset ?? position
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return JSONSyntaxError(reason, offset: offset, line: line, column: column)
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

    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard let byte = current else { throw error(.endExpectingValue) }
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
            throw error(.unexpectedCharacter)
        }
    }

    private mutating func parseLiteral(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count else { throw error(.truncatedLiteral(word.description)) }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for offset in 0..<count where bytes[position + offset] != expected[offset] {
            throw error(.invalidLiteral(word.description))
        }
        position += count
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= maxDepth else { throw error(.depthLimitExceeded(maxDepth: maxDepth)) }
        position += 1  // {
        var members: [JSONValue.Member] = []
        var keys = Set<String>()
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error(.expectedKey) }
            let keyStart = position
            let key = try parseString()
            if rejectsDuplicateKeys, !keys.insert(key).inserted { throw error(.duplicateKey(key), at: keyStart) }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error(.expectedColon) }
            position += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONValue.Member(key: key, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(members)
            case nil: throw error(.endInObject)
            default: throw error(.expectedCommaOrBrace)
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= maxDepth else { throw error(.depthLimitExceeded(maxDepth: maxDepth)) }
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
            case nil: throw error(.endInArray)
            default: throw error(.expectedCommaOrBracket)
            }
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = position
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, isDigit(first) else { throw error(.numberNeedsDigit) }
        position += 1
        if first != UInt8(ascii: "0") {
            while let byte = current, isDigit(byte) { position += 1 }
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard let byte = current, isDigit(byte) else { throw error(.fractionNeedsDigit) }
            while let byte = current, isDigit(byte) { position += 1 }
        }
        if let byte = current, byte | 0x20 == UInt8(ascii: "e") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let byte = current, isDigit(byte) else { throw error(.exponentNeedsDigit) }
            while let byte = current, isDigit(byte) { position += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// The bytes from `start` to the current position as a string; checked
    /// to be UTF-8 when parsing bytes (the error is at the current position).
    private func run(from start: Int) throws(JSONSyntaxError) -> UnsafeBufferPointer<UInt8> {
        let run = UnsafeBufferPointer(rebasing: bytes[start..<position])
        if validatesUTF8, String(validating: run, as: UTF8.self) == nil { throw error(.invalidUTF8) }
        return run
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        position += 1  // opening quote
        var start = position
        // Fast path: no escapes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: try run(from: start), as: UTF8.self)
                position += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error(.controlCharacter) }
            position += 1
        }
        // Slow path: runs between escapes are copied as they end.
        var out: [UInt8] = []
        out.reserveCapacity(position - start + 16)
        while true {
            guard position < bytes.count else { throw error(.unterminatedString) }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                out.append(contentsOf: try run(from: start))
                position += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                out.append(contentsOf: try run(from: start))
                position += 1
                guard let escape = current else { throw error(.unterminatedEscape) }
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
                            bytes[position + 1] == UInt8(ascii: "u")
                        else {
                            throw error(.unpairedHighSurrogate)
                        }
                        position += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error(.invalidLowSurrogate) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error(.loneLowSurrogate)
                    }
                    // Not a surrogate: always a scalar.
                    out.append(contentsOf: Character(Unicode.Scalar(scalar)!).utf8)
                default:
                    throw error(.invalidEscape, at: position - 1)
                }
                start = position
            default:
                if byte < 0x20 { throw error(.controlCharacter) }
                position += 1
            }
        }
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        let start = position
        guard bytes.count - position >= 4 else { throw error(.invalidHexEscape(badDigitOffset: start), at: start) }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = bytes[start + offset]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw error(.invalidHexEscape(badDigitOffset: start + offset), at: start)
            }
            value = value << 4 | UInt32(nibble)
        }
        position += 4
        return value
    }
}
