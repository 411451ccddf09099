import Foundation
import Testing
@testable import IngestSupport

/// The one JSON parser on its own: the grammar, the options each caller
/// uses (duplicate keys kept or rejected, the depth limit, a byte order
/// mark), error positions as byte offsets and as lines and columns, exact
/// number text, and the writer.
@Suite struct JSONTests {
    func failure(
        _ text: String, _ options: JSONParsingOptions = .strict(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> JSONSyntaxError? {
        do {
            _ = try JSONValue(parsing: Array(text.utf8), options: options)
            Issue.record("parsed \(text)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test func jsonValueParsesStrictlyAndRoundTrips() throws {
        let text = #"{"a":[1,-2.5e3,true,false,null],"b":"\u00e9\ud83d\ude00\n\"","c":{}}"#
        let value = try JSONValue(parsing: text, options: .strict())
        #expect(value["b"]?.stringValue == "é😀\n\"")
        #expect(value["a"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null]))
        #expect(try JSONValue(parsing: value.jsonText, options: .strict()) == value)
        for bad in ["{\"a\":01}", "[1,]", "{\"a\" 1}", "\"\\x\"", "\"\u{01}\"", "[\"\\ud800\"]", "nul", "-", "1.", "[1e]"] {
            #expect(throws: JSONSyntaxError.self, "\(bad)") { try JSONValue(parsing: bad, options: .strict()) }
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: deep, options: .strict()) }
    }

    @Test func membersKeepTheirOrderNumbersTheirText() throws {
        let value = try JSONValue(
            parsing: #" { "b" : 1.50 , "a" : [ -0 , 1E+3, 123456789012345678901234567890 ] } "#,
            options: JSONParsingOptions())
        #expect(value.jsonText == #"{"b":1.50,"a":[-0,1E+3,123456789012345678901234567890]}"#)
        guard case .object(let members) = value else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["b", "a"])
        #expect(value["b"]?.doubleValue == 1.5 && value["b"]?.integerValue == nil)
        #expect(try JSONValue(parsing: "1E3", options: JSONParsingOptions()).integerValue == 1000)
        #expect(JSONValue.integer(Int64.min).integerValue == Int64.min)
        #expect(value["a"]?.kindDescription == "an array" && value["missing"] == nil)
    }

    @Test func duplicateKeysAreKeptOrRejected() throws {
        let text = #"{"a": 1, "b": {"c": 2, "c": 3}}"#
        let kept = try JSONValue(parsing: text, options: JSONParsingOptions(duplicateKeys: .keep))
        #expect(kept.jsonText == #"{"a":1,"b":{"c":2,"c":3}}"#)
        let error = failure(text)
        #expect(error?.code == .duplicateKey && error?.reason == .duplicateKey("c"))
        // At the repeated key.
        #expect(error?.offset == 23 && error?.line == 1 && error?.column == 24)
        #expect(error?.description == #"JSON syntax error at line 1, column 24: duplicate key "c""#)
    }

    @Test func errorsGiveTheOffsetLineAndColumn() {
        let error = failure("{\n  \"apps\": [\n    {\"id\": \"a1\",}\n  ]\n}")
        #expect(error?.code == .syntax && error?.reason == .expectedKey)
        #expect(error?.line == 3 && error?.column == 17 && error?.offset == 30)
        #expect(error?.description == "JSON syntax error at line 3, column 17: expected a key string")
        let cases: [(text: String, reason: JSONSyntaxError.Reason, offset: Int, message: String)] = [
            ("", .endExpectingValue, 0, "unexpected end of input, expected a value"),
            ("[1] 2", .trailingText, 4, "unexpected text after the JSON value"),
            ("[1 2]", .expectedCommaOrBracket, 3, "expected ',' or ']' in an array"),
            ("[1", .endInArray, 2, "unexpected end of input in an array"),
            (#"{"a":1"#, .endInObject, 6, "unexpected end of input in an object"),
            (#"{"a":1 "b":2}"#, .expectedCommaOrBrace, 7, "expected ',' or '}' in an object"),
            (#"{"a" 1}"#, .expectedColon, 5, "expected ':' after key"),
            ("tru", .truncatedLiteral("true"), 0, "invalid literal, expected true"),
            ("nulx", .invalidLiteral("null"), 0, "invalid literal, expected null"),
            ("'a'", .unexpectedCharacter, 0, "unexpected character, expected a value"),
            ("-a", .numberNeedsDigit, 1, "invalid number"),
            ("1.e3", .fractionNeedsDigit, 2, "invalid number: digits expected after '.'"),
            ("1e+", .exponentNeedsDigit, 3, "invalid number: digits expected in the exponent"),
            ("\"a\u{1}\"", .controlCharacter, 2, "control character in a string (escape it)"),
            ("\"abc", .unterminatedString, 4, "unterminated string"),
            ("\"a\\", .unterminatedEscape, 3, "unterminated escape"),
            (#""a\x""#, .invalidEscape, 3, "invalid escape character"),
            (#""\u12g4""#, .invalidHexEscape(badDigitOffset: 5), 3, "invalid \\u escape: four hex digits expected"),
            (#""\u12""#, .invalidHexEscape(badDigitOffset: 3), 3, "invalid \\u escape: four hex digits expected"),
            (#""\ud800x""#, .unpairedHighSurrogate, 7, "unpaired surrogate in \\u escape"),
            (#""\ud800\u0041""#, .invalidLowSurrogate, 13, "invalid low surrogate in \\u escape"),
            (#""\udc00""#, .loneLowSurrogate, 7, "invalid \\u escape"),
        ]
        for item in cases {
            let error = failure(item.text)
            #expect(error?.reason == item.reason, "\(item.text)")
            #expect(error?.offset == item.offset, "\(item.text)")
            #expect(error?.message == item.message, "\(item.text)")
        }
    }

    @Test func bytesMustBeUTF8InStrings() throws {
        for (bytes, offset) in [([0x22, 0xFF, 0x22], 2), ([0x22, 0x61, 0xC3, 0x22], 3), ([0x22, 0xC3, 0x5C, 0x6E, 0x22], 2)]
            as [([UInt8], Int)]
        {
            do {
                _ = try JSONValue(parsing: bytes, options: .strict())
                Issue.record("accepted \(bytes)")
            } catch {
                #expect(error.reason == .invalidUTF8 && error.offset == offset, "\(bytes)")
            }
        }
        #expect(try JSONValue(parsing: Array("\"é\\n😀\"".utf8), options: .strict()) == .string("é\n😀"))
    }

    @Test func aByteOrderMarkIsSkippedOnlyWhenAllowed() throws {
        let text = "\u{FEFF}{\"a\": 1}"
        #expect(try JSONValue(parsing: text, options: .strict())["a"] == .number("1"))
        let refused = try #require(failure(text, JSONParsingOptions()))
        #expect(refused.reason == .unexpectedCharacter && refused.offset == 0)
    }

    @Test func nestingIsBoundedByTheDepthLimit() throws {
        let options = JSONParsingOptions(maxDepth: 3)
        #expect(try JSONValue(parsing: "[[[1]]]", options: options) == .array([.array([.array([.number("1")])])]))
        #expect(try JSONValue(parsing: #"{"a":{"b":{}}}"#, options: options)["a"] != nil)
        let error = try #require(failure("[[[[]]]]", options))
        #expect(error.code == .depthLimitExceeded && error.reason == .depthLimitExceeded(maxDepth: 3))
        #expect(error.offset == 3 && error.message == "nesting deeper than 3 levels")
        #expect(failure(#"{"a":{"b":{"c":[]}}}"#, options)?.code == .depthLimitExceeded)
    }

    @Test func theWriterEscapesWhatJSONNeeds() {
        let value = JSONValue.object([.init("k\"\\", .string("\u{8}\u{C}\n\r\t\u{1}\u{1F}é/")), .init("n", .null), .init("t", .bool(true))])
        #expect(value.jsonText == #"{"k\"\\":"\b\f\n\r\t\u0001\u001fé/","n":null,"t":true}"#)
    }

    /// Seeded random texts built from JSON's own characters: each parses,
    /// or throws JSONSyntaxError pointing inside the text; what parses
    /// writes text that parses back to the same value.
    @Test func randomTextsParseOrThrow() throws {
        var state: UInt64 = 0x15_0A_2B
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let alphabet = Array(#"{}[]:,"\ 0123456789-+.eEtrufalsn\u/bd8c"#.utf8) + [0x0A, 0x01, 0xC3, 0xA9, 0xFF, 0xEF, 0xBB, 0xBF]
        var parsed = 0
        for _ in 0..<20_000 {
            let count = Int(next() % 24)
            let bytes = (0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            for options in [JSONParsingOptions.strict(maxDepth: 4), JSONParsingOptions(maxDepth: 4)] {
                do {
                    let value = try JSONValue(parsing: bytes, options: options)
                    parsed += 1
                    #expect(try JSONValue(parsing: value.jsonText, options: options) == value, "\(bytes)")
                } catch {
                    #expect(error.offset >= 0 && error.offset <= bytes.count, "\(bytes)")
                    #expect(error.line >= 1 && error.column >= 1)
                }
            }
        }
        #expect(parsed > 100)
    }
}
