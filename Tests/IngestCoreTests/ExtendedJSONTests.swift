import Foundation
import Testing
@testable import IngestCore
import IngestTestSupport

@Suite struct ExtendedJSONTests {
    /// A document with every BSON type (no NaN, which never equals itself).
    static let everyType: BSONDocument = [
        "_id": .objectId(ObjectId(high: 0x57E1_93D7_A9CC_81B4, low: 0x0274_98B5)),
        "double": .double(-1.5), "integralDouble": .double(3), "negativeZero": .double(-0.0),
        "string": "héllo \"quoted\" \\ \n\t\u{1} ☆ 😀",
        "document": .document(["a": .int32(1), "$ref": "not a dbref without $id"]),
        "array": .array([.int32(1), .int64(1 << 40), .null, .array([])]),
        "binary": .binary(BSONBinary(subtype: 0x80, bytes: [1, 2, 3, 4, 5])),
        "uuid": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(0..<16))),
        "undefined": .undefined, "true": true, "false": false,
        "date": .datetime(1_356_351_330_501), "oldDate": .datetime(-284_643_869_501),
        "null": .null, "regex": .regex(pattern: "^a/\"b", options: "imx"),
        "pointer": .dbPointer(ref: "db.coll", id: ObjectId(high: 1, low: 2)),
        "code": .javascript("function() {}"), "symbol": .symbol("sym"),
        "codeWithScope": .javascriptWithScope(code: "x + y", scope: ["x": .int32(1), "y": .document(["z": .minKey])]),
        "int32": .int32(.min), "timestamp": .timestamp(BSONTimestamp(seconds: 4_000_000_000, increment: 42)),
        "int64": .int64(.max), "decimal": .decimal128(Decimal128(high: 0x3040_0000_0000_0000, low: 1)),
        "minKey": .minKey, "maxKey": .maxKey,
    ]

    @Test func canonicalRoundTripsEveryType() throws {
        let text = Self.everyType.extendedJSON(.canonical)
        let parsed = try BSONDocument(extendedJSON: text)
        #expect(parsed == Self.everyType)
        #expect(parsed.extendedJSON(.canonical) == text)
        // Relaxed text is stable under a second round trip.
        let relaxed = Self.everyType.extendedJSON(.relaxed)
        #expect(try BSONDocument(extendedJSON: relaxed).extendedJSON(.relaxed) == relaxed)
        #expect(try BSONDocument(extendedJSON: text).bsonBytes() == Self.everyType.bsonBytes())
    }

    @Test func writesTheSpecifiedForms() {
        let doc: BSONDocument = [
            "i": .int32(5), "l": .int64(6), "d": .double(1), "t": .datetime(0),
            "b": .binary(BSONBinary(subtype: 0, bytes: [0xFF, 0xFF])), "ts": .timestamp(BSONTimestamp(seconds: 1, increment: 2)),
        ]
        #expect(
            doc.extendedJSON(.canonical)
                == #"{"i":{"$numberInt":"5"},"l":{"$numberLong":"6"},"d":{"$numberDouble":"1.0"},"t":{"$date":{"$numberLong":"0"}},"b":{"$binary":{"base64":"//8=","subType":"00"}},"ts":{"$timestamp":{"t":1,"i":2}}}"#
        )
        #expect(
            doc.extendedJSON(.relaxed)
                == #"{"i":5,"l":6,"d":1.0,"t":{"$date":"1970-01-01T00:00:00Z"},"b":{"$binary":{"base64":"//8=","subType":"00"}},"ts":{"$timestamp":{"t":1,"i":2}}}"#
        )
        #expect(doc.extendedJSON() == doc.extendedJSON(.relaxed))
        #expect(BSON.double(.nan).extendedJSON(.relaxed) == #"{"$numberDouble":"NaN"}"#)
        #expect(BSON.double(-.infinity).extendedJSON(.relaxed) == #"{"$numberDouble":"-Infinity"}"#)
        #expect(BSON.string("a\u{0}\u{1F}\u{7F}é").extendedJSON() == "\"a\\u0000\\u001f\u{7F}é\"")
    }

    @Test func doublesUseShortestRoundTripText() throws {
        let cases: [(Double, String)] = [
            (1.0, "1.0"), (-0.0, "-0.0"), (0.1, "0.1"), (1e20, "1E+20"), (1.5e-7, "1.5E-7"),
            (5e-324, "5E-324"), (1.2345678921232e18, "1.2345678921232E+18"),
            (.greatestFiniteMagnitude, "1.7976931348623157E+308"), (123456.789, "123456.789"),
        ]
        for (number, text) in cases {
            #expect(BSON.double(number).extendedJSON(.relaxed) == text)
            #expect(BSON.double(number).extendedJSON(.canonical) == #"{"$numberDouble":"\#(text)"}"#)
            for mode in [ExtendedJSONMode.relaxed, .canonical] {
                let back = try BSON(extendedJSON: BSON.double(number).extendedJSON(mode))
                guard case .double(let parsed) = back else {
                    Issue.record("\(text) did not parse back as a double: \(back)")
                    continue
                }
                #expect(parsed.bitPattern == number.bitPattern, "\(text)")
            }
        }
    }

    @Test func relaxedNumbersPickTheSmallestType() throws {
        #expect(try BSON(extendedJSON: "1") == .int32(1))
        #expect(try BSON(extendedJSON: "-2147483648") == .int32(.min))
        #expect(try BSON(extendedJSON: "2147483648") == .int64(2_147_483_648))
        #expect(try BSON(extendedJSON: "9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try BSON(extendedJSON: "1.0") == .double(1))
        #expect(try BSON(extendedJSON: "1e2") == .double(100))
    }

    @Test func readsLegacyAndAlternativeForms() throws {
        let doc = try BSONDocument(
            extendedJSON: """
                {"bin": {"$binary": "AQI=", "$type": "80"},
                 "re": {"$regex": "^a", "$options": "xmi"},
                 "uuid": {"$uuid": "73ffd264-44b3-4c69-90e8-e7d1dfc035d4"},
                 "uuid2": {"$uuid": "73FFD26444B34C6990E8E7D1DFC035D4"},
                 "when": {"$date": "2012-12-24T13:15:30.501+01:00"},
                 "whenFraction": {"$date": "1970-01-01T00:00:00.5Z"},
                 "reversed": {"$code": "f", "$scope": {}},
                 "query": {"$regex": {"$regularExpression": {"pattern": "p", "options": ""}}, "$options": "ix"},
                 "type": {"$type": "string"},
                 "dbref": {"$ref": "c", "$id": 1}}
                """)
        #expect(doc["bin"] == .binary(BSONBinary(subtype: 0x80, bytes: [1, 2])))
        #expect(doc["re"] == .regex(pattern: "^a", options: "imx"))
        let uuid: [UInt8] = [0x73, 0xFF, 0xD2, 0x64, 0x44, 0xB3, 0x4C, 0x69, 0x90, 0xE8, 0xE7, 0xD1, 0xDF, 0xC0, 0x35, 0xD4]
        #expect(doc["uuid"] == .binary(BSONBinary(subtype: 4, bytes: uuid)))
        #expect(doc["uuid2"] == doc["uuid"])
        #expect(doc["when"] == .datetime(1_356_351_330_501))
        #expect(doc["whenFraction"] == .datetime(500))
        #expect(doc["reversed"] == .javascriptWithScope(code: "f", scope: [:]))
        // A $regex query operator holding a document stays a document.
        #expect(
            doc["query"]
                == .document([
                    "$regex": .regex(pattern: "p", options: ""), "$options": "ix",
                ]))
        #expect(doc["type"] == .document(["$type": "string"]))
        #expect(doc["dbref"] == .document(["$ref": "c", "$id": .int32(1)]))
    }

    @Test func datesUseISOTextOnlyFrom1970To9999() throws {
        #expect(BSON.datetime(253_402_300_799_999).extendedJSON() == #"{"$date":"9999-12-31T23:59:59.999Z"}"#)
        #expect(BSON.datetime(253_402_300_800_000).extendedJSON() == #"{"$date":{"$numberLong":"253402300800000"}}"#)
        #expect(BSON.datetime(-1).extendedJSON() == #"{"$date":{"$numberLong":"-1"}}"#)
        #expect(BSON.datetime(951_782_400_001).extendedJSON() == #"{"$date":"2000-02-29T00:00:00.001Z"}"#)
        #expect(try BSON(extendedJSON: #"{"$date":"1969-12-31T23:59:59.999Z"}"#) == .datetime(-1))
        for bad in [
            "2001-02-29T00:00:00Z", "2012-12-24 12:15:30Z", "2012-12-24T12:15:30", "2012-13-01T00:00:00Z",
            "2012-12-24T24:00:00Z", "2012-12-24T12:15:30.Z", "12-12-24T12:15:30Z",
        ] {
            #expect(throws: ExtendedJSONError.self, "\(bad)") { try BSON(extendedJSON: #"{"$date":"\#(bad)"}"#) }
        }
    }

    @Test func errorsNameTheCodeAndPath() {
        do {
            _ = try BSONDocument(extendedJSON: #"{"a": {"b": [1, {"$oid": 42}]}}"#)
            Issue.record("accepted a bad $oid")
        } catch {
            #expect(error.code == .invalidWrapper)
            #expect(error.path == ["a", "b", "1"])
            #expect(error.description.contains("a.b.1"))
        }
        do {
            _ = try BSONDocument(extendedJSON: #"{"a": tru}"#)
            Issue.record("accepted bad JSON")
        } catch {
            #expect(error.code == .syntax)
            #expect(error.offset == 6)
        }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: "[1]") }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$numberDouble": "inf"}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$numberDouble": "0x1p3"}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$numberInt": "2147483648"}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$numberLong": "+1"}}"#) }
        #expect(throws: ExtendedJSONError.self) {
            try BSONDocument(extendedJSON: #"{"a": {"$binary": {"base64": "AQI", "subType": "00"}}}"#)
        }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$binary": {"base64": "", "subType": "100"}}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$timestamp": {"t": 4294967296, "i": 1}}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$scope": {}}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$undefined": false}}"#) }
        #expect(throws: ExtendedJSONError.self) { try BSONDocument(extendedJSON: #"{"a": {"$numberDecimal": "1E-6177"}}"#) }
    }

    @Test func parsesStrictJSON() throws {
        #expect(try BSON(extendedJSON: #""\ud83d\ude00 \u00e9 \/ \b\f\n\r\t""#) == .string("😀 é / \u{8}\u{C}\n\r\t"))
        for bad in [
            #""\ud83d""#, #""\ude00""#, #""\x""#, "\"a\u{1}\"", "01", "1.", ".5", "-", "+1", "1e", "[1,]",
            #"{"a":1,}"#, #"{"a" 1}"#, "nul", "[1] 2", "", "NaN", "'a'",
        ] {
            #expect(throws: ExtendedJSONError.self, "\(bad)") { try JSONValue(parsing: bad) }
        }
        // Member order, duplicates and number text survive.
        let value = try JSONValue(parsing: #" { "b" : 1.50 , "a" : [ -0 , 1E+3 ] , "b" : null } "#)
        #expect(value.jsonText == #"{"b":1.50,"a":[-0,1E+3],"b":null}"#)
    }

    /// The wording and byte offsets of Extended JSON's syntax errors (the
    /// JSON parser is IngestSupport's; Extended JSON keeps its own messages).
    @Test func syntaxErrorsKeepTheirWordingAndOffsets() {
        let cases: [(text: String, offset: Int, message: String)] = [
            ("", 0, "unexpected end of the text; expected a value"),
            ("{", 1, "expected a string key"),
            ("[1,]", 3, "unexpected character; expected a value"),
            (#"{"a" 1}"#, 5, "expected ':' after the key"),
            (#"{"a":1 "b":2}"#, 7, "expected ',' or '}' in an object"),
            (#"{"a":1"#, 6, "expected ',' or '}' in an object"),
            ("[1 2]", 3, "expected ',' or ']' in an array"),
            ("tru", 0, "unexpected end of the text"),
            ("trux", 0, "invalid literal; expected 'true'"),
            ("-a", 1, "a number needs a digit"),
            ("1.e3", 2, "a fraction needs a digit"),
            ("1E-x", 3, "an exponent needs a digit"),
            ("1,5", 1, "unexpected text after the JSON value"),
            ("\"abc", 4, "unterminated string"),
            ("\"a\\", 3, "unterminated escape"),
            (#""a\x""#, 4, "invalid escape in a string"),
            (#""\u12""#, 3, "a \\u escape needs four hex digits"),
            (#""\u12g4""#, 5, "a \\u escape needs four hex digits"),
            (#""\ud800x""#, 7, "unpaired UTF-16 surrogate in a \\u escape"),
            (#""\ud800\u0041""#, 13, "unpaired UTF-16 surrogate in a \\u escape"),
            (#""\udc00""#, 7, "unpaired UTF-16 surrogate in a \\u escape"),
            ("\"a\u{1}b\"", 2, "a control character must be escaped in a string"),
            ("\u{FEFF}{}", 0, "unexpected character; expected a value"),
        ]
        for item in cases {
            do {
                _ = try JSONValue(parsing: item.text)
                Issue.record("parsed \(item.text)")
            } catch {
                #expect(error.code == .syntax, "\(item.text)")
                #expect(error.offset == item.offset, "\(item.text)")
                #expect(error.message == item.message, "\(item.text)")
            }
        }
        do {
            _ = try JSONValue(parsing: "[[[]]]", maxDepth: 2)
            Issue.record("accepted nesting beyond the limit")
        } catch {
            #expect(error.code == .depthLimitExceeded && error.offset == 2)
            #expect(error.message == "objects and arrays are nested deeper than 2")
        }
    }

    @Test func nestingIsBoundedByTheDepthLimit() throws {
        let limit = ExtendedJSONParsingOptions().maxDepth
        let deep = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        let value = try BSON(extendedJSON: deep)
        #expect(value.extendedJSON() == deep)
        let tooDeep = "[" + deep + "]"
        do {
            _ = try BSON(extendedJSON: tooDeep)
            Issue.record("accepted nesting beyond the limit")
        } catch {
            #expect(error.code == .depthLimitExceeded)
        }
        #expect(throws: ExtendedJSONError.self) {
            try BSONDocument(extendedJSON: #"{"a":{"b":{}}}"#, options: ExtendedJSONParsingOptions(maxDepth: 2))
        }
        #expect(try BSONDocument(extendedJSON: #"{"a":{"b":1}}"#, options: ExtendedJSONParsingOptions(maxDepth: 2))["a"] != nil)

        // Larger limits are capped at the ceiling, which keeps the
        // recursion inside a thread's stack.
        let ceiling = ExtendedJSONParsingOptions.depthCeiling
        let huge = ExtendedJSONParsingOptions(maxDepth: 1_000_000)
        let atCeiling = String(repeating: #"{"a":"#, count: ceiling) + "1" + String(repeating: "}", count: ceiling)
        #expect(try BSONDocument(extendedJSON: atCeiling, options: huge).extendedJSON() == atCeiling)
        do {
            _ = try BSONDocument(extendedJSON: #"{"a":"# + atCeiling + "}", options: huge)
            Issue.record("accepted nesting beyond the ceiling")
        } catch {
            #expect(error.code == .depthLimitExceeded)
        }
    }

    /// Type wrappers filled with random values of every JSON kind: each
    /// either reads as a value whose canonical text reads back identically,
    /// or throws ExtendedJSONError.
    @Test func wrappersWithRandomContentParseOrThrow() throws {
        var random = SplitMix64(state: 0x3A_77E5)
        let keys = [
            "$oid", "$symbol", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal", "$binary",
            "$type", "$uuid", "$code", "$scope", "$timestamp", "$regularExpression", "$regex", "$options",
            "$dbPointer", "$ref", "$id", "$date", "$minKey", "$maxKey", "$undefined", "base64", "subType",
            "t", "i", "pattern", "options", "x",
        ]
        let leaves = [
            #""""#, #""1""#, #""-1""#, #""2147483648""#, #""1.5E+3""#, #""Infinity""#, #""NaN""#, #""nan""#,
            #""56e1fc72e0c917e9c4714161""#, #""//8=""#, #""04""#, #""80""#, #""1970-01-01T00:00:00Z""#,
            #""73ffd264-44b3-4c69-90e8-e7d1dfc035d4""#, #""imx""#, "1", "0", "-1", "4294967296", "1.0",
            "true", "false", "null", "[]", "{}",
        ]
        func randomValue(_ depth: Int) -> String {
            if depth > 3 || Int.random(in: 0..<3, using: &random) > 0 { return leaves.randomElement(using: &random)! }
            let count = Int.random(in: 1...3, using: &random)
            let members = (0..<count).map { _ in
                "\"\(keys.randomElement(using: &random)!)\":\(randomValue(depth + 1))"
            }
            return "{" + members.joined(separator: ",") + "}"
        }
        var parsed = 0
        for _ in 0..<3000 {
            let text = #"{"v":"# + randomValue(0) + "}"
            guard let document = try? BSONDocument(extendedJSON: text) else { continue }
            parsed += 1
            let canonical = document.extendedJSON(.canonical)
            #expect(try BSONDocument(extendedJSON: canonical).extendedJSON(.canonical) == canonical, "\(text)")
            #expect(try BSONDocument(bson: document.bsonBytes()).extendedJSON(.canonical) == canonical, "\(text)")
        }
        print("ExtendedJSON wrapper fuzz: 3000 inputs, \(parsed) parsed")
        #expect(parsed > 0)
    }

    static func throughBSON(_ document: BSONDocument) -> Result<BSONDocument, BSONError> {
        do {
            return .success(try BSONDocument(bson: document.bsonBytes()))
        } catch {
            return .failure(error)
        }
    }

    /// Random and mutated text: the parser either returns a document or
    /// throws `ExtendedJSONError`, never crashes or hangs; whatever parses
    /// writes canonical text that parses back to the same text, and
    /// survives a trip through BSON bytes.
    @Test func randomAndMutatedTextNeverCrashes() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["INGEST_FUZZ_SEED"] ?? "") ?? 0xE7_150
        var random = SplitMix64(state: seed)
        let seeds: [String] = [
            Self.everyType.extendedJSON(.canonical),
            Self.everyType.extendedJSON(.relaxed),
            #"{"a": {"$numberDecimal": "1.050E+4"}, "b": {"$regex": "x", "$options": "i"}, "c": {"$binary": "AQI=", "$type": "80"}}"#,
            #"{"d": {"$date": "2012-12-24T12:15:30.501Z"}, "u": {"$uuid": "73ffd264-44b3-4c69-90e8-e7d1dfc035d4"}, "e": [1, 2.5, -3e10, "\u00e9\ud83d\ude00"]}"#,
        ]
        let tokens: [String] = [
            "{", "}", "[", "]", "\"", ":", ",", "\\", "\\u", "\\ud83d", "0", "1", "-", ".", "e", "E+", "9999999999999999999999",
            "null", "true", "false", " ", "\"$oid\"", "\"$date\"", "\"$numberLong\"", "\"$numberDouble\"", "\"$numberDecimal\"",
            "\"$binary\"", "\"$type\"", "\"$code\"", "\"$scope\"", "\"$timestamp\"", "\"$regularExpression\"", "\"$regex\"",
            "\"$options\"", "\"$dbPointer\"", "\"$ref\"", "\"$id\"", "\"$minKey\"", "\"$uuid\"", "\"NaN\"", "\"Infinity\"",
            "\"base64\"", "\"subType\"", "\"t\"", "\"i\"", "\"pattern\"", "\"options\"", "é", "😀", "\u{0}",
        ]
        let count = Int(ProcessInfo.processInfo.environment["INGEST_FUZZ_COUNT"] ?? "") ?? 3000
        let seconds = Double(ProcessInfo.processInfo.environment["INGEST_FUZZ_SECONDS"] ?? "") ?? 10
        let deadline = Date().addingTimeInterval(seconds)
        var parsedCount = 0
        var iterations = 0
        while iterations < count, Date() < deadline {
            iterations += 1
            var bytes: [UInt8]
            if Int.random(in: 0..<4, using: &random) == 0 {
                // Random token soup.
                bytes = []
                for _ in 0..<Int.random(in: 1...40, using: &random) {
                    bytes += Array(tokens.randomElement(using: &random)!.utf8)
                }
            } else {
                bytes = Array(seeds.randomElement(using: &random)!.utf8)
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    guard !bytes.isEmpty else { break }
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<5, using: &random) {
                    case 0: bytes[at] = UInt8.random(in: 0...127, using: &random)
                    case 1: bytes.insert(contentsOf: Array(tokens.randomElement(using: &random)!.utf8), at: at)
                    case 2: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...8, using: &random)))
                    case 3:
                        let chunk = Array(bytes[at..<min(bytes.count, at + Int.random(in: 1...16, using: &random))])
                        bytes.insert(contentsOf: chunk, at: at)
                    default: bytes.removeSubrange(at...)
                    }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            _ = try? BSON(extendedJSON: text)
            // Typed throws: the only error possible here is ExtendedJSONError.
            guard let document = try? BSONDocument(extendedJSON: text) else { continue }
            parsedCount += 1
            let canonical = document.extendedJSON(.canonical)
            let reparsed = try BSONDocument(extendedJSON: canonical)
            #expect(reparsed.extendedJSON(.canonical) == canonical, "seed \(seed): \(text)")
            _ = try BSONDocument(extendedJSON: document.extendedJSON(.relaxed))
            switch Self.throughBSON(document) {
            case .success(let fromBytes):
                #expect(fromBytes.extendedJSON(.canonical) == canonical, "seed \(seed): \(text)")
            case .failure(let error):
                // Extended JSON allows deeper nesting than the BSON decoder.
                #expect(error.code == .depthLimitExceeded, "seed \(seed): \(text): \(error)")
            }
        }
        print("ExtendedJSON fuzz: seed \(seed), \(iterations) inputs, \(parsedCount) parsed")
        #expect(iterations > 0)
    }
}
