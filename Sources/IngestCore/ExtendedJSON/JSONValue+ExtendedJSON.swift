// The JSON value and its parser live in IngestSupport (JSON/); Extended
// JSON reads them, and users of IngestCore meet `JSONValue` by name here.
@_exported import enum IngestSupport.JSONValue
import IngestSupport

extension JSONValue {
    /// Parses JSON text (RFC 8259, UTF-8), with objects and arrays nested at
    /// most `maxDepth` deep (at most
    /// ``ExtendedJSONParsingOptions/depthCeiling``). Object members keep
    /// their order and duplicates, numbers their text.
    ///
    /// ```swift
    /// let value = try JSONValue(parsing: #"{"b": 1.50, "a": [true, null]}"#)
    /// if case .object(let members) = value { print(members.map(\.key)) }  // ["b", "a"]
    /// ```
    ///
    /// Throws ``ExtendedJSONError`` with code `.syntax` (and the byte
    /// offset) or `.depthLimitExceeded`.
    public init(parsing text: String, maxDepth: Int = 200) throws(ExtendedJSONError) {
        self = try Self.extendedJSONLayer(text, maxDepth: min(maxDepth, ExtendedJSONParsingOptions.depthCeiling))
    }

    /// The JSON below Extended JSON: duplicates kept, no byte order mark,
    /// errors as ``ExtendedJSONError``.
    static func extendedJSONLayer(_ text: String, maxDepth: Int) throws(ExtendedJSONError) -> JSONValue {
        do {
            return try JSONValue(parsing: text, options: JSONParsingOptions(maxDepth: maxDepth))
        } catch {
            throw ExtendedJSONError(error)
        }
    }
}

extension ExtendedJSONError {
    /// Extended JSON's wording and byte offset for a JSON syntax error.
    init(_ error: JSONSyntaxError) {
        var offset = error.offset
        let message: String
        switch error.reason {
        case .trailingText: message = "unexpected text after the JSON value"
        case .endExpectingValue: message = "unexpected end of the text; expected a value"
        case .unexpectedCharacter: message = "unexpected character; expected a value"
        case .truncatedLiteral: message = "unexpected end of the text"
        case .invalidLiteral(let literal): message = "invalid literal; expected '\(literal)'"
        case .depthLimitExceeded(let maxDepth):
            self.init(code: .depthLimitExceeded, offset: offset, message: "objects and arrays are nested deeper than \(maxDepth)")
            return
        case .expectedKey: message = "expected a string key"
        case .duplicateKey(let key): message = "duplicate key \"\(key)\""
        case .expectedColon: message = "expected ':' after the key"
        case .endInObject, .expectedCommaOrBrace: message = "expected ',' or '}' in an object"
        case .endInArray, .expectedCommaOrBracket: message = "expected ',' or ']' in an array"
        case .numberNeedsDigit: message = "a number needs a digit"
        case .fractionNeedsDigit: message = "a fraction needs a digit"
        case .exponentNeedsDigit: message = "an exponent needs a digit"
        case .controlCharacter: message = "a control character must be escaped in a string"
        case .unterminatedString: message = "unterminated string"
        case .unterminatedEscape: message = "unterminated escape"
        case .invalidEscape:
            // Extended JSON points just past the escape character.
            offset += 1
            message = "invalid escape in a string"
        case .invalidHexEscape(let badDigitOffset):
            offset = badDigitOffset
            message = "a \\u escape needs four hex digits"
        case .unpairedHighSurrogate, .invalidLowSurrogate, .loneLowSurrogate:
            message = "unpaired UTF-16 surrogate in a \\u escape"
        case .invalidUTF8: message = "invalid UTF-8 in a string"
        }
        self.init(code: .syntax, offset: offset, message: message)
    }
}
