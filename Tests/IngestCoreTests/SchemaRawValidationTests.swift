import Testing
@testable import IngestCore

/// The server's quick pass on encoded bytes must never call an invalid
/// document valid, and must agree with the document quick pass on every
/// scalar document it can judge.
@Suite struct SchemaRawValidationTests {
    private static let sensor = ObjectSchema(
        className: "Reading", kind: .asymmetric,
        properties: [
            Property(name: "_id", type: .objectId, isPrimaryKey: true),
            Property(name: "deviceId", type: .string),
            Property(name: "temperature", type: .float),
            Property(name: "pressure", type: .double, isOptional: true),
            Property(name: "wind", type: .int),
            Property(name: "ok", type: .bool, isOptional: true),
            Property(name: "at", type: .date, isOptional: true),
            Property(name: "price", type: .decimal128, isOptional: true),
            Property(name: "blob", type: .data, isOptional: true),
            Property(name: "serial", type: .uuid, isOptional: true),
            Property(name: "tags", type: .string, collection: .list),
            Property(name: "extra", type: .mixed, isOptional: true),
        ])

    private static func base() -> BSONDocument {
        [
            "_id": .objectId(ObjectId.generate()), "deviceId": "WX1278UIT", "temperature": .double(66.7),
            "pressure": .double(29.65), "wind": .int64(2),
        ]
    }

    /// Documents each paired with whether the raw quick pass must prove them valid.
    private static func cases() -> [(String, BSONDocument, Bool)] {
        var list: [(String, BSONDocument, Bool)] = [("in schema order", base(), true)]
        var shuffled: BSONDocument = ["wind": .int32(2), "temperature": .double(-1), "deviceId": "d"]
        shuffled.append("_id", .objectId(ObjectId.generate()))
        list.append(("shuffled, int32 for int", shuffled, true))
        var all = base()
        all["ok"] = .bool(true)
        all["at"] = .datetime(1_700_000_000_000)
        all["price"] = .decimal128(Decimal128(high: 0x3040_0000_0000_0000, low: 12))
        all["blob"] = .binary(BSONBinary(bytes: [1, 2, 3]))
        all["serial"] = .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(repeating: 9, count: 16)))
        list.append(("every scalar type", all, true))
        var nullOptional = base()
        nullOptional["pressure"] = .null
        list.append(("null where optional", nullOptional, true))
        var nullRequired = base()
        nullRequired["deviceId"] = .null
        list.append(("null where required", nullRequired, false))
        var missing = base()
        missing["wind"] = nil
        list.append(("required field missing", missing, false))
        var duplicate = base()
        duplicate.append("wind", .int64(3))
        list.append(("duplicate field", duplicate, false))
        var unknown = base()
        unknown["colour"] = "red"
        list.append(("unknown field", unknown, false))
        var wrongType = base()
        wrongType["wind"] = .double(2)
        list.append(("double for int", wrongType, false))
        var tooLarge = base()
        tooLarge["temperature"] = .double(1e300)
        list.append(("float out of range", tooLarge, false))
        var infinite = base()
        infinite["temperature"] = .double(.infinity)
        list.append(("infinite float", infinite, true))
        var shortUUID = base()
        shortUUID["serial"] = .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: [1, 2]))
        list.append(("short uuid", shortUUID, false))
        var oldBinary = base()
        oldBinary["blob"] = .binary(BSONBinary(subtype: BSONBinary.Subtype.binaryOld, bytes: [1, 2]))
        list.append(("old binary subtype for data", oldBinary, false))
        var undefinedValue = base()
        undefinedValue["pressure"] = .undefined
        list.append(("undefined for double", undefinedValue, false))
        var list1 = base()
        list1["tags"] = .array(["a"])
        list.append(("a list (full check only)", list1, false))
        var mixed = base()
        mixed["extra"] = .int32(1)
        list.append(("a mixed value (full check only)", mixed, false))
        var nullMixed = base()
        nullMixed["extra"] = .null
        list.append(("null for an optional mixed", nullMixed, true))
        var nullList = base()
        nullList["tags"] = .null
        list.append(("null for a list (full check only)", nullList, false))
        return list
    }

    @Test func provenDocumentsAreValidAndAgreeWithTheDocumentQuickPass() throws {
        let schema = try Schema([Self.sensor])
        for (name, document, expected) in Self.cases() {
            let raw = Self.sensor.isCertainlyValid(bson: document.bsonBytes())
            #expect(raw == expected, "\(name)")
            #expect(raw == DocumentValidator.isCertainlyValid(document, as: Self.sensor), "\(name)")
            if raw { #expect(Self.sensor.validate(document, in: schema).isEmpty, "\(name)") }
        }
    }

    /// Keys are compared by words: every byte of a name of any length must
    /// still count, at the document's end (where a word cannot be read) too.
    @Test func keysMatchByEveryByte() throws {
        let names = (1...20).map { length in String((0..<length).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) }) }
        let object = ObjectSchema(
            className: "Keys", kind: .asymmetric,
            properties: [Property(name: "_id", type: .int, isPrimaryKey: true)]
                + names.map { Property(name: $0, type: .int, isOptional: true) })
        for name in names {
            let good: BSONDocument = ["_id": .int64(1), name: .int64(2)]
            #expect(object.isCertainlyValid(bson: good.bsonBytes()), "\(name)")
            // Last in the document with a null value: fewer than 8 bytes follow the key.
            let last: BSONDocument = ["_id": .int64(1), name: .null]
            #expect(object.isCertainlyValid(bson: last.bsonBytes()), "\(name) null")
            for position in 0..<name.utf8.count {
                var bytes = Array(name.utf8)
                bytes[position] = UInt8(ascii: "Z")
                let other = String(decoding: bytes, as: UTF8.self)
                for value: BSON in [.int64(2), .null] {
                    let changed: BSONDocument = ["_id": .int64(1), other: value]
                    #expect(!object.isCertainlyValid(bson: changed.bsonBytes()), "\(other)")
                }
            }
        }
    }

    /// The spans it records are where a validating walk finds the elements.
    @Test func spansAreTheWalksElements() throws {
        var all = Self.base()
        all["ok"] = .bool(true)
        all["serial"] = .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(repeating: 9, count: 16)))
        let bytes = all.bsonBytes()
        let check = ObjectSchema.QuickCheck(Self.sensor)
        var spans = [BSONElementSpan](repeating: BSONElementSpan(start: 7, valueOffset: 7, end: 7), count: check.propertyNames.count)
        let proven = bytes.withUnsafeBytes { raw in spans.withUnsafeMutableBufferPointer { check.isCertainlyValid(bson: raw, spans: $0) } }
        #expect(proven)
        var walked: [String: BSONElementSpan] = [:]
        try BSONDocument.forEachElement(in: bytes) { walked[$0.key] = $0.span }
        for (index, name) in check.propertyNames.enumerated() {
            #expect(spans[index] == (walked[name] ?? .absent), "\(name)")
        }
    }

    @Test func invalidBytesAreNeverProven() {
        let good = Self.base().bsonBytes()
        #expect(Self.sensor.isCertainlyValid(bson: good))
        // Every truncation, and every single-byte change of the length
        // prefix, a type byte or the terminator, is not proven.
        for count in 0..<good.count {
            #expect(!Self.sensor.isCertainlyValid(bson: Array(good.prefix(count))))
        }
        var badLength = good
        badLength[0] &+= 1
        #expect(!Self.sensor.isCertainlyValid(bson: badLength))
        var badTerminator = good
        badTerminator[good.count - 1] = 1
        #expect(!Self.sensor.isCertainlyValid(bson: badTerminator))
        var badUTF8 = good
        // The device id's first byte ("W"): 0xFF is never valid UTF-8.
        let device = Array("WX1278UIT".utf8)
        let at = (0...(good.count - device.count)).first { Array(good[$0..<($0 + device.count)]) == device }!
        badUTF8[at] = 0xFF
        #expect(throws: BSONError.self) { try BSONDocument(bson: badUTF8) }
        #expect(!Self.sensor.isCertainlyValid(bson: badUTF8))
        var trailing = good
        trailing.append(0)
        #expect(!Self.sensor.isCertainlyValid(bson: trailing))
    }
}
