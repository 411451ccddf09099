import Foundation
import Testing
@testable import IngestCore
import IngestTestSupport

/// Upper/lower-case hex (spaces allowed) to bytes.
fileprivate func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8.filter { $0 != UInt8(ascii: " ") })
    precondition(digits.count % 2 == 0, "odd hex length")
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: preconditionFailure("bad hex digit")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

fileprivate func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02X", $0) }.joined()
}

/// Decodes `hex`, expects the single field "a" (or `key`) and checks that
/// re-encoding gives the same bytes.
fileprivate func roundTrip(_ hexText: String, key: String = "a") throws -> BSON? {
    let input = bytes(hexText)
    let doc = try BSONDocument(bson: input)
    #expect(hex(doc.bsonBytes()) == hex(input), "re-encoding \(hexText)")
    return doc[key]
}

fileprivate func expectError(
    _ code: BSONError.Code, _ hexText: String, options: BSONDecodingOptions = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        let doc = try BSONDocument(bson: bytes(hexText), options: options)
        Issue.record("decoded \(hexText) as \(doc); expected \(code)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(hexText): \(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct BSONCodecTests {
    // MARK: Every type

    @Test func scalars() throws {
        #expect(try roundTrip("10000000016100000000000000F03F00") == .double(1.0))
        #expect(try roundTrip("0E00000002610002000000620000") == .string("b"))
        #expect(try roundTrip("190000000261000D000000C3A9C3A9C3A9C3A9C3A9C3A90000") == .string("éééééé"))
        #expect(try roundTrip("190000000261000D0000006162006261620062616261620000") == .string("ab\0bab\0babab"))
        #expect(try roundTrip("0800000006610000") == .undefined)
        #expect(
            try roundTrip("1400000007610056E1FC72E0C917E9C471416100")
                == .objectId(try ObjectId(hex: "56e1fc72e0c917e9c4714161")))
        #expect(try roundTrip("090000000861000100") == .bool(true))
        #expect(try roundTrip("090000000861000000") == .bool(false))
        #expect(try roundTrip("10000000096100D1D6D6CC3B01000000") == .datetime(1_356_351_330_001))
        #expect(try roundTrip("080000000A610000") == .null)
        #expect(try roundTrip("0C0000001061000100000000") == .int32(1))
        #expect(try roundTrip("0C000000106100FFFFFF7F00") == .int32(.max))
        #expect(try roundTrip("100000001161002A00000015CD5B0700") == .timestamp(BSONTimestamp(seconds: 123_456_789, increment: 42)))
        #expect(try roundTrip("10000000126100FFFFFFFFFFFFFF7F00") == .int64(.max))
        #expect(
            try roundTrip("180000001364000000000000000000000000000000403000")
                == nil)  // key is "d"
        #expect(
            try roundTrip("180000001364000000000000000000000000000000403000", key: "d")
                == .decimal128(Decimal128(high: 0x3040_0000_0000_0000, low: 0)))
        #expect(try roundTrip("08000000FF610000") == .minKey)
        #expect(try roundTrip("080000007F610000") == .maxKey)
    }

    @Test func doublesKeepTheirBitPattern() throws {
        // -0.0 and a NaN with a payload must come back byte for byte.
        guard case .double(let negativeZero)? = try roundTrip("10000000016400000000000000008000", key: "d") else {
            Issue.record("not a double"); return
        }
        #expect(negativeZero.bitPattern == 0x8000_0000_0000_0000)
        guard case .double(let nan)? = try roundTrip("10000000016400120000000000F87F00", key: "d") else {
            Issue.record("not a double"); return
        }
        #expect(nan.bitPattern == 0x7FF8_0000_0000_0012)
    }

    @Test func stringLikeTypes() throws {
        #expect(try roundTrip("0E0000000D610002000000620000") == .javascript("b"))
        #expect(try roundTrip("0E0000000E610002000000620000") == .symbol("b"))
        #expect(try roundTrip("0F0000000B610061626300696D0000") == .regex(pattern: "abc", options: "im"))
        #expect(
            try roundTrip("1A0000000C610002000000620056E1FC72E0C917E9C471416100")
                == .dbPointer(ref: "b", id: try ObjectId(hex: "56e1fc72e0c917e9c4714161")))
        #expect(
            try roundTrip("210000000F6100190000000500000061626364000C000000107800010000000000")
                == .javascriptWithScope(code: "abcd", scope: ["x": .int32(1)]))
    }

    @Test func regexOptionsAreSorted() throws {
        // "mix" decodes as "imx" and re-encodes canonically (corpus degenerate case).
        let doc = try BSONDocument(bson: bytes("100000000B6100616263006D69780000"))
        #expect(doc["a"] == .regex(pattern: "abc", options: "imx"))
        #expect(hex(doc.bsonBytes()) == "100000000B610061626300696D780000")
        let built: BSONDocument = ["a": .regex(pattern: "abc", options: "xmi")]
        #expect(hex(built.bsonBytes()) == "100000000B610061626300696D780000")
    }

    @Test func binarySubtypes() throws {
        #expect(try roundTrip("0D000000057800000000000000", key: "x") == .binary(BSONBinary(bytes: [])))
        #expect(try roundTrip("0F0000000578000200000000FFFF00", key: "x") == .binary(BSONBinary(subtype: 0, bytes: [0xFF, 0xFF])))
        // The old subtype 0x02 keeps only the payload; its inner length is written back.
        #expect(
            try roundTrip("13000000057800060000000202000000FFFF00", key: "x")
                == .binary(BSONBinary(subtype: BSONBinary.Subtype.binaryOld, bytes: [0xFF, 0xFF])))
        guard case .binary(let uuid)? = try roundTrip("1D000000057800100000000473FFD26444B34C6990E8E7D1DFC035D400", key: "x") else {
            Issue.record("not binary"); return
        }
        #expect(uuid.subtype == BSONBinary.Subtype.uuid && uuid.bytes.count == 16)
        #expect(try roundTrip("0F0000000578000200000080FFFF00", key: "x") == .binary(BSONBinary(subtype: 0x80, bytes: [0xFF, 0xFF])))
    }

    @Test func documentsAndArrays() throws {
        #expect(try roundTrip("0D000000037800050000000000", key: "x") == .document([:]))
        #expect(try roundTrip("160000000378000E0000000261000200000062000000", key: "x") == .document(["a": "b"]))
        #expect(try roundTrip("0D000000046100050000000000") == .array([]))
        #expect(try roundTrip("1b000000046100130000001030000a000000103100140000000000") == .array([.int32(10), .int32(20)]))
        // Array keys other than "0", "1", … decode and re-encode as indexes.
        let odd = try BSONDocument(bson: bytes("150000000461000D000000106162000A0000000000"))
        #expect(odd["a"] == .array([.int32(10)]))
        #expect(hex(odd.bsonBytes()) == "140000000461000C0000001030000A0000000000")
        // Arrays with more than 10 elements get two-digit keys.
        let long: BSONDocument = ["a": .array((0..<12).map { .int32(Int32($0)) })]
        let decoded = try BSONDocument(bson: long.bsonBytes())
        #expect(decoded == long)
        #expect(long.bsonBytes().count == 4 + 1 + 2 + 4 + 10 * 7 + 2 * 8 + 1 + 1)
    }

    @Test func duplicateKeysAndOrderAreKept() throws {
        var doc = BSONDocument()
        doc.append("b", .int32(1))
        doc.append("a", .int32(2))
        doc.append("b", .int32(3))
        let decoded = try BSONDocument(bson: doc.bsonBytes())
        #expect(decoded.fields.map(\.key) == ["b", "a", "b"])
        #expect(decoded == doc)
    }

    @Test func everyTypeInOneDocumentRoundTrips() throws {
        let doc: BSONDocument = [
            "_id": .objectId(ObjectId.generate()),
            "d": .double(-0.0), "s": "text ☆", "doc": .document(["n": .null]),
            "arr": .array([.int64(1), "x", .document([:])]),
            "bin": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(0..<16))),
            "old": .binary(BSONBinary(subtype: BSONBinary.Subtype.binaryOld, bytes: [1, 2, 3])),
            "u": .undefined, "t": true, "dt": .datetime(-1), "re": .regex(pattern: "^a.*", options: "i"),
            "ptr": .dbPointer(ref: "db.c", id: ObjectId(high: 1, low: 2)), "js": .javascript("f()"),
            "sym": .symbol("s"), "jws": .javascriptWithScope(code: "x", scope: ["x": .int32(1)]),
            "i32": .int32(-5), "ts": .timestamp(BSONTimestamp(seconds: 1, increment: 2)), "i64": .int64(.min),
            "dec": .decimal128(Decimal128(high: 0x3040_0000_0000_0000, low: 1)), "min": .minKey, "max": .maxKey,
        ]
        let encoded = doc.bsonBytes()
        let decoded = try BSONDocument(bson: encoded)
        #expect(decoded == doc)
        #expect(decoded.bsonBytes() == encoded)
        // The slice and raw-buffer entry points agree.
        var framed = [UInt8](repeating: 0xAA, count: 3) + encoded + [0xBB]
        #expect(try BSONDocument(bson: framed[3..<(3 + encoded.count)]) == doc)
        let viaRaw = try framed.withUnsafeMutableBytes { raw in
            try BSONDocument(bson: UnsafeRawBufferPointer(rebasing: raw[3..<(3 + encoded.count)]))
        }
        #expect(viaRaw == doc)
    }

    @Test func appendBSONReusesTheBuffer() throws {
        let a: BSONDocument = ["x": .int32(1)]
        let b: BSONDocument = ["y": "z"]
        var buffer: [UInt8] = [0xEE]
        a.appendBSON(to: &buffer)
        b.appendBSON(to: &buffer)
        #expect(buffer.first == 0xEE)
        #expect(Array(buffer[1...]) == a.bsonBytes() + b.bsonBytes())
    }

    @Test func writerBuildsTheSameBytesAsADocument() throws {
        let id = ObjectId.generate()
        var buffer: [UInt8] = []
        let error = BSONWriter.withWriter(appendingTo: &buffer) { writer in
            let start = writer.beginDocument()
            writer.appendObjectId("_id", id)
            writer.appendString("deviceId", "WX1278UIT")
            writer.appendDouble("t", 66.7)
            writer.appendBool("ok", true)
            writer.appendInt32("i", 7)
            writer.appendInt64("n", 2)
            writer.appendDatetime("when", millisecondsSince1970: 1000)
            writer.appendNull("none")
            writer.appendDecimal128("dec", Decimal128(high: 1, low: 2))
            writer.appendBinary("bin", BSONBinary(bytes: [9]))
            let inner = writer.beginDocument("inner")
            writer.appendValue("v", .minKey)
            writer.endDocument(inner)
            let list = writer.beginArray("list")
            writer.appendValue(index: 0, .string("a"))
            writer.appendKey(index: 1, type: .double)
            writer.appendBody(.double(2))
            writer.endDocument(list)
            writer.appendDocument("sub", ["k": .int32(1)])
            writer.endDocument(start)
            return writer.error
        }
        #expect(error == nil)
        let expected: BSONDocument = [
            "_id": .objectId(id), "deviceId": "WX1278UIT", "t": 66.7, "ok": true, "i": .int32(7),
            "n": .int64(2), "when": .datetime(1000), "none": .null, "dec": .decimal128(Decimal128(high: 1, low: 2)),
            "bin": .binary(BSONBinary(bytes: [9])), "inner": .document(["v": .minKey]),
            "list": .array(["a", .double(2)]), "sub": .document(["k": .int32(1)]),
        ]
        #expect(buffer == expected.bsonBytes())
        #expect(try BSONDocument(bson: buffer) == expected)
    }

    @Test func forEachElementReadsTypedValuesInPlace() throws {
        let id = ObjectId.generate()
        let doc: BSONDocument = [
            "_id": .objectId(id), "deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7,
            "barometricPressureInHg": 29.65, "windSpeedInMph": .int64(2), "small": .int32(-3),
            "ok": false, "when": .datetime(5), "dec": .decimal128(Decimal128(high: 7, low: 8)),
            "nested": .document(["a": .array([.null])]), "none": .null,
        ]
        var seen: [String] = []
        var reading = (id: ObjectId?.none, device: String?.none, temperature: Double?.none, wind: Int64?.none)
        try BSONDocument.forEachElement(in: doc.bsonBytes()) { (element) throws in
            seen.append(element.key)
            #expect(try element.value() == doc[element.key])
            if element.keyEquals("_id") { reading.id = element.objectId }
            if element.keyEquals("deviceId") { reading.device = element.string }
            if element.keyEquals("temperatureInFahrenheit") {
                reading.temperature = element.double
                // Same length, differing in the first word, the last word, the tail.
                #expect(!element.keyEquals("xemperatureInFahrenheit"))
                #expect(!element.keyEquals("temperatureInFahrenhei!"))
                #expect(!element.keyEquals("temperatureInFahrenhe!t"))
                #expect(!element.keyEquals("temperatureInFahrenheit!"))
                #expect(element.keyEquals(String("temperatureInFahrenheit".reversed().reversed())))
            }
            if element.keyEquals("windSpeedInMph") { reading.wind = element.integer }
            if element.keyEquals("small") { #expect(element.int32 == -3 && element.integer == -3 && element.int64 == nil) }
            if element.keyEquals("ok") { #expect(element.bool == false) }
            if element.keyEquals("when") { #expect(element.datetime == 5) }
            if element.keyEquals("dec") { #expect(element.decimal128 == Decimal128(high: 7, low: 8)) }
            if element.keyEquals("none") { #expect(element.isNull) }
            if element.keyEquals("nested") { #expect(element.type == .document && element.double == nil) }
        }
        #expect(seen == doc.keys)
        #expect(reading.id == id && reading.device == "WX1278UIT" && reading.temperature == 66.7 && reading.wind == 2)
        // Invalid input is rejected just as by the decoder, even in fields
        // the caller does not read, and even after some elements were seen.
        #expect(throws: BSONError.self) {
            try BSONDocument.forEachElement(in: bytes("1A0000000C610002000000E90056E1FC72E0C917E9C471416100")) { _ in }
        }
        #expect(throws: BSONError.self) {
            try BSONDocument.forEachElement(in: bytes("160000000378000E0000000261000200000062000001")) { _ in }
        }
    }

    @Test func nulInKeyIsReportedAndOutputStaysValid() throws {
        let doc: BSONDocument = ["a\0b": .int32(1)]
        #expect { try doc.checkedBSONBytes() } throws: { ($0 as? BSONError)?.code == .nulInCString }
        let regex: BSONDocument = ["r": .regex(pattern: "a\0", options: "")]
        #expect { try regex.checkedBSONBytes() } throws: { ($0 as? BSONError)?.code == .nulInCString }
        let decoded = try BSONDocument(bson: doc.bsonBytes())
        #expect(decoded.keys == ["a"])
        let good: BSONDocument = ["ab": .int32(1)]
        #expect(try good.checkedBSONBytes() == good.bsonBytes())
    }

    // MARK: Validation errors

    @Test func envelopeErrors() {
        expectError(.truncated, "")
        expectError(.truncated, "050000")
        expectError(.invalidLength, "0400000000")
        expectError(.truncated, "05000000")
        expectError(.missingTerminator, "0500000001")
        expectError(.trailingBytes, "050000000000")
        expectError(.truncated, "1300000002666F6F00040000006261720000")
        expectError(.invalidType, "07000000800000")
        expectError(.invalidType, "07000000140000")
        expectError(.missingTerminator, "0D000000107801010101010100")
    }

    @Test func lengthErrors() {
        // Embedded document longer than its parent / shorter than its fields.
        expectError(.invalidLength, "1800000003666F6F000F0000001062617200FFFFFF7F0000")
        expectError(.truncated, "1500000003666F6F000A0000000862617200010000")
        // String lengths: zero, negative, past the parent's end.
        expectError(.invalidLength, "0C0000000261000000000000")
        expectError(.invalidLength, "0C000000026100FFFFFFFF00")
        expectError(.invalidLength, "120000000200FFFFFF00666F6F6261720000")
        // Binary: length past the end, negative, bad old-subtype inner lengths.
        expectError(.invalidLength, "1D000000057800FF0000000573FFD26444B34C6990E8E7D1DFC035D400")
        expectError(.invalidLength, "0D000000057800FFFFFFFF0000")
        expectError(.invalidLength, "13000000057800060000000203000000FFFF00")
        expectError(.invalidLength, "13000000057800060000000201000000FFFF00")
        expectError(.invalidLength, "0F0000000578000200000002FFFF00")
        expectError(.invalidLength, "100000000578000300000002FFFFFF00")
        // Code with scope: total too small, too short for its parts, too long.
        expectError(.invalidLength, "160000000F61000D0000000100000000050000000000")
        expectError(.invalidLength, "280000000F61001F0000000500000061626364001300000010780001000000107900010000000000")
        expectError(.invalidLength, "280000000F6100210000000500000061626364001300000010780001000000107900010000000000")
        expectError(.missingTerminator, "280000000F6100200000000600000061626364001300000010780001000000107900010000000000")
    }

    @Test func truncatedScalars() {
        expectError(.trailingBytes, "0B0000000164000000F03F00")
        expectError(.truncated, "0B00000001640000000000")
        expectError(.truncated, "090000001061000500")
        expectError(.truncated, "0C0000001261001234567800")
        expectError(.truncated, "1200000007610056E1FC72E0C917E9C471")
        expectError(.truncated, "1200000002666F")
    }

    @Test func terminatorErrors() {
        expectError(.missingTerminator, "1000000002610004000000616263FF00")
        expectError(.missingTerminator, "0E00000002610001000000FF0000")
        // Regex parts are C strings: an unterminated options string.
        expectError(.missingTerminator, "0D0000000B6100616263006900")
        // A 0x00 type byte before the declared end.
        expectError(.invalidLength, "0E00000002610001000000000000")
    }

    @Test func utf8Errors() {
        expectError(.invalidUTF8, "0E00000002610002000000E90000")
        expectError(.invalidUTF8, "0E0000000D610002000000E90000")
        expectError(.invalidUTF8, "0C00000010E9000100000000")
        expectError(.invalidUTF8, "0B0000000B6100E9000000")
        // Overlong encoding and a lone surrogate are not UTF-8 either.
        expectError(.invalidUTF8, "0F00000002610003000000C0AF0000")
        expectError(.invalidUTF8, "1000000002610004000000EDA0800000")
    }

    @Test func utf8ValidationMatchesTheStandardLibrary() {
        // Every 1- and 2-byte sequence, and a deterministic sample of 3- and
        // 4-byte ones weighted towards lead and continuation bytes.
        func agree(_ input: [UInt8]) -> Bool {
            let ours = input.withUnsafeBytes { BSONDecoder.isValidUTF8($0) }
            return ours == (String(validating: input, as: UTF8.self) != nil)
        }
        var mismatches: [[UInt8]] = []
        for a in 0...255 where !agree([UInt8(a)]) { mismatches.append([UInt8(a)]) }
        for a in 0xC0...0xFF {
            for b in 0...255 where !agree([UInt8(a), UInt8(b)]) { mismatches.append([UInt8(a), UInt8(b)]) }
        }
        let interesting: [UInt8] = [
            0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF,
            0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF,
        ]
        for a: UInt8 in [0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5] {
            for b in interesting {
                for c in interesting {
                    if !agree([a, b, c]) { mismatches.append([a, b, c]) }
                    for d: UInt8 in [0x41, 0x80, 0xBF, 0xC0] where !agree([a, b, c, d]) { mismatches.append([a, b, c, d]) }
                    // The same after an 8-byte ASCII run (the word-at-a-time path).
                    if !agree(Array("abcdefgh".utf8) + [a, b, c]) { mismatches.append([a, b, c]) }
                }
            }
        }
        #expect(mismatches.isEmpty, "first mismatches: \(mismatches.prefix(5))")
    }

    @Test func nulSearchMatchesALinearScan() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...40, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...3, using: &random) == 0 ? 0 : UInt8.random(in: 1...255, using: &random)
            }
            let expected = bytes.firstIndex(of: 0)
            let found = bytes.withUnsafeBytes { raw in
                raw.baseAddress.flatMap { BSONDecoder.firstNul(in: $0, count: count) }
            }
            #expect(found == expected, "\(bytes)")
        }
    }

    @Test func nulAndASCIISearchMatchesALinearScan() {
        var random = SplitMix64(seed: 43)
        for _ in 0..<4_000 {
            let count = Int.random(in: 0...40, using: &random)
            let bytes = (0..<count).map { _ -> UInt8 in
                switch UInt8.random(in: 0...7, using: &random) {
                case 0: 0
                case 1: UInt8.random(in: 0x80...0xFF, using: &random)
                default: UInt8.random(in: 1...0x7F, using: &random)
                }
            }
            let expected = bytes.firstIndex(of: 0).map { nul in (nul, bytes[..<nul].allSatisfy { $0 < 0x80 }) }
            let found = bytes.withUnsafeBytes { raw in
                raw.baseAddress.flatMap { BSONDecoder.nulAndASCII(in: $0, count: count) }
            }
            #expect(found?.0 == expected?.0 && found?.1 == expected?.1, "\(bytes)")
        }
    }

    @Test func keysAndStringsOfEveryShortLengthRoundTrip() throws {
        // Lengths around the word size and the 15-byte small-string limit,
        // ASCII and not, keys and string values.
        for length in 0...40 {
            for text in [
                String(repeating: "k", count: length),
                String(repeating: "é", count: length / 2) + String(repeating: "k", count: length % 2),
            ] {
                let doc: BSONDocument = [text: .string(text), "z": .int32(1)]
                let decoded = try BSONDocument(bson: doc.bsonBytes())
                #expect(decoded == doc, "\(text.utf8.count)-byte key and string")
                #expect(decoded.keys.first?.utf8.count == text.utf8.count)
            }
        }
        // Invalid UTF-8 at every position of a 20-byte key is rejected.
        for position in 0..<20 {
            var key = Array(repeating: UInt8(ascii: "k"), count: 20)
            key[position] = 0xE9
            let body: [UInt8] = [0x10] + key + [0x00, 0x01, 0x00, 0x00, 0x00]
            let length = UInt32(body.count + 5)
            let input = withUnsafeBytes(of: length.littleEndian, Array.init) + body + [0x00]
            #expect { try BSONDocument(bson: input) } throws: { ($0 as? BSONError)?.code == .invalidUTF8 }
        }
    }

    @Test func appendBSONWithTooLittleSpareCapacityFallsBack() throws {
        // The encoder writes into spare capacity first and starts over with
        // the exact size when that runs out: every amount of spare room, with
        // bytes before it, must give the same bytes and keep the prefix.
        let doc: BSONDocument = [
            "_id": .objectId(ObjectId(high: 0x0102_0304_0506_0708, low: 0x090A_0B0C)),
            "deviceId": "WX1278UIT",
            "nested": .document(["a": .array([.int32(1), "two", .double(3)]), "b": .binary(BSONBinary(bytes: [1, 2, 3]))]),
            "temperatureInFahrenheit": .double(66.7),
            "regex": .regex(pattern: "^a", options: "mi"),
        ]
        let expected = doc.bsonBytes()
        for prefix in 0...3 {
            for room in 0...(expected.count + 8) {
                var buffer: [UInt8] = []
                buffer.reserveCapacity(prefix + room)
                buffer.append(contentsOf: Array(repeating: 0xEE, count: prefix))
                doc.appendBSON(to: &buffer)
                #expect(Array(buffer[..<prefix]) == Array(repeating: 0xEE, count: prefix))
                #expect(Array(buffer[prefix...]) == expected, "prefix \(prefix), room \(room)")
            }
        }
        // A key cut at a NUL is still reported when the first try ran out of room.
        let bad: BSONDocument = ["a\0b": .int32(1), "long": .string(String(repeating: "x", count: 100))]
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16)
        #expect { try bad.checkedBSONBytes() } throws: { ($0 as? BSONError)?.code == .nulInCString }
        bad.appendBSON(to: &buffer)
        #expect(try BSONDocument(bson: buffer).keys == ["a", "long"])
    }

    @Test func booleanErrors() {
        expectError(.invalidBoolean, "090000000862000200")
        expectError(.invalidBoolean, "09000000086200FF00")
    }

    @Test func depthLimit() throws {
        // 100 nested documents decode with the default limit, 101 do not.
        func nested(_ depth: Int) -> BSONDocument {
            var doc: BSONDocument = ["leaf": .int32(1)]
            for _ in 1..<depth { doc = ["d": .document(doc)] }
            return doc
        }
        #expect(throws: Never.self) { try BSONDocument(bson: nested(100).bsonBytes()) }
        expectError(.depthLimitExceeded, hex(nested(101).bsonBytes()))
        expectError(.depthLimitExceeded, hex(nested(3).bsonBytes()), options: BSONDecodingOptions(maxDepth: 2))
        // Arrays and code-with-scope scopes count too.
        let arrays: BSONDocument = ["a": .array([.array([.int32(1)])])]
        expectError(.depthLimitExceeded, hex(arrays.bsonBytes()), options: BSONDecodingOptions(maxDepth: 2))
        let scope: BSONDocument = ["c": .javascriptWithScope(code: "", scope: ["s": .document([:])])]
        expectError(.depthLimitExceeded, hex(scope.bsonBytes()), options: BSONDecodingOptions(maxDepth: 2))
        #expect(throws: Never.self) { try BSONDocument(bson: scope.bsonBytes(), options: BSONDecodingOptions(maxDepth: 3)) }
        // A huge configured limit is capped, so hostile nesting cannot
        // exhaust the stack: 1001 levels fail even with maxDepth 1_000_000.
        // Nested documents under empty keys, built by hand (lengths inside out).
        func nestedBytes(_ levels: Int) -> [UInt8] {
            var inner: [UInt8] = [5, 0, 0, 0, 0]
            for _ in 1..<levels {
                let length = 4 + 2 + inner.count + 1
                inner = withUnsafeBytes(of: Int32(length).littleEndian, Array.init) + [0x03, 0x00] + inner + [0]
            }
            return inner
        }
        expectError(.depthLimitExceeded, hex(nestedBytes(1001)), options: BSONDecodingOptions(maxDepth: 1_000_000))
        #expect(throws: Never.self) { try BSONDocument(bson: nestedBytes(1000), options: BSONDecodingOptions(maxDepth: 1_000_000)) }
    }

    @Test func errorsCarryOffsetAndMessage() {
        do {
            _ = try BSONDocument(bson: bytes("090000000862000200"))
            Issue.record("decoded an invalid boolean")
        } catch {
            #expect(error.code == .invalidBoolean)
            #expect(error.offset == 7)
            #expect(error.description.contains("0x2"))
        }
    }

    /// Every `decodeErrors` case of the shared BSON corpus is rejected (the
    /// full corpus test, with Extended JSON, lives in the corpus suite).
    @Test func corpusDecodeErrorsAreRejected() throws {
        let folder = BSONCorpusTests.corpusDirectory()  // $BSON_CORPUS_DIR, else ../shared/testdata
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        #expect(!files.isEmpty, "no corpus files in \(folder.path)")
        var total = 0
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
            for case let entry as [String: Any] in json["decodeErrors"] as? [Any] ?? [] {
                guard let hexText = entry["bson"] as? String else { continue }
                total += 1
                #expect(throws: BSONError.self, "\(file): \(entry["description"] ?? "")") {
                    try BSONDocument(bson: bytes(hexText))
                }
                #expect(throws: BSONError.self, "\(file): forEachElement: \(entry["description"] ?? "")") {
                    try BSONDocument.forEachElement(in: bytes(hexText)) { _ in }
                }
            }
            for case let entry as [String: Any] in json["valid"] as? [Any] ?? [] {
                guard let hexText = entry["canonical_bson"] as? String else { continue }
                let doc = try BSONDocument(bson: bytes(hexText))
                #expect(hex(doc.bsonBytes()) == hexText.uppercased(), "\(file): \(entry["description"] ?? "")")
                if let degenerate = entry["degenerate_bson"] as? String {
                    let again = try BSONDocument(bson: bytes(degenerate))
                    #expect(hex(again.bsonBytes()) == hexText.uppercased(), "\(file): degenerate \(entry["description"] ?? "")")
                }
            }
        }
        print("BSON corpus: \(total) decodeErrors cases rejected")
        #expect(total >= 75)
    }
}
