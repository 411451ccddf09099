/// Text that is not JSON (RFC 8259), or JSON the parser's options refuse
/// (nested too deep, a repeated key): what is wrong and where, as a byte
/// offset and as a line and column.
///
/// The one error of the JSON parser. Extended JSON (IngestCore) turns it
/// into `ExtendedJSONError` with its own wording (``Reason`` says what went
/// wrong); the server's configuration and login bodies show its
/// ``description``.
///
/// ```swift
/// do {
///     _ = try JSONValue(parsing: "{\n  \"a\": [1,]\n}", options: .strict())
/// } catch {
///     print(error)   // JSON syntax error at line 2, column 11: unexpected character, expected a value
/// }
/// ```
package struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The text is not JSON.
        package static let syntax = Code(rawValue: "syntax")
        /// Objects and arrays are nested deeper than ``JSONParsingOptions/maxDepth``.
        package static let depthLimitExceeded = Code(rawValue: "depthLimitExceeded")
        /// An object repeats a key and the options reject duplicates.
        package static let duplicateKey = Code(rawValue: "duplicateKey")
    }

    /// What the parser found, in detail (for callers with their own wording).
    package enum Reason: Sendable, Hashable {
        case trailingText
        case endExpectingValue
        case unexpectedCharacter
        /// The text ends inside the literal (`tru`).
        case truncatedLiteral(String)
        case invalidLiteral(String)
        case depthLimitExceeded(maxDepth: Int)
        case expectedKey
        case duplicateKey(String)
        case expectedColon
        case endInObject
        case expectedCommaOrBrace
        case endInArray
        case expectedCommaOrBracket
        case numberNeedsDigit
        case fractionNeedsDigit
        case exponentNeedsDigit
        case controlCharacter
        case unterminatedString
        case unterminatedEscape
        /// The error's offset is the escape character's.
        case invalidEscape
        /// The error's offset is the first of the four digits';
        /// `badDigitOffset` the first that is not hex (or the first, if the
        /// text ends before four).
        case invalidHexEscape(badDigitOffset: Int)
        /// A high surrogate `\uD8xx` not followed by a `\u` escape.
        case unpairedHighSurrogate
        /// A high surrogate followed by a `\u` escape that is not a low surrogate.
        case invalidLowSurrogate
        /// A low surrogate `\uDCxx` without a high one before it.
        case loneLowSurrogate
        /// A string that is not valid UTF-8 (only when parsing bytes).
        case invalidUTF8
    }

    /// What went wrong, in detail.
    package var reason: Reason
    /// The byte offset of the error in the UTF-8 text.
    package var offset: Int
    /// 1-based line of the error.
    package var line: Int
    /// 1-based column (in bytes) of the error.
    package var column: Int

    package init(_ reason: Reason, offset: Int, line: Int, column: Int) {
        self.reason = reason
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// The kind of problem.
    package var code: Code {
        switch reason {
        case .depthLimitExceeded: .depthLimitExceeded
        case .duplicateKey: .duplicateKey
        default: .syntax
        }
    }

    /// What is wrong, for people.
    package var message: String {
        switch reason {
        case .trailingText: "unexpected text after the JSON value"
        case .endExpectingValue: "unexpected end of input, expected a value"
        case .unexpectedCharacter: "unexpected character, expected a value"
        case .truncatedLiteral(let literal), .invalidLiteral(let literal): "invalid literal, expected \(literal)"
        case .depthLimitExceeded(let maxDepth): "nesting deeper than \(maxDepth) levels"
        case .expectedKey: "expected a key string"
        case .duplicateKey(let key): "duplicate key \"\(key)\""
        case .expectedColon: "expected ':' after key"
        case .endInObject: "unexpected end of input in an object"
        case .expectedCommaOrBrace: "expected ',' or '}' in an object"
        case .endInArray: "unexpected end of input in an array"
        case .expectedCommaOrBracket: "expected ',' or ']' in an array"
        case .numberNeedsDigit: "invalid number"
        case .fractionNeedsDigit: "invalid number: digits expected after '.'"
        case .exponentNeedsDigit: "invalid number: digits expected in the exponent"
        case .controlCharacter: "control character in a string (escape it)"
        case .unterminatedString: "unterminated string"
        case .unterminatedEscape: "unterminated escape"
        case .invalidEscape: "invalid escape character"
        case .invalidHexEscape: "invalid \\u escape: four hex digits expected"
        case .unpairedHighSurrogate: "unpaired surrogate in \\u escape"
        case .invalidLowSurrogate: "invalid low surrogate in \\u escape"
        case .loneLowSurrogate: "invalid \\u escape"
        case .invalidUTF8: "invalid UTF-8 in a string"
        }
    }

    package var description: String { "JSON syntax error at line \(line), column \(column): \(message)" }
}
