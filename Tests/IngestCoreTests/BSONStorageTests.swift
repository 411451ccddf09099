import Foundation
import Testing
@testable import IngestCore
import IngestSupport

/// How decoded documents are held: strings built from their in-memory
/// representation (`StringRepresentation`), interned long keys
/// (`BSONKeyCache`, `BSONKeyArena`) and the field buffer behind
/// `BSONDocument`. None of it may change what a document holds.
@Suite struct BSONStorageTests {
    /// The layout check passes on the toolchain the project ships with; if
    /// a new one changes the layout the fast paths switch off, and this
    /// test says so.
    @Test(.disabled(if: PortableFallbacks.areForced, "DATAINGEST_PORTABLE=1 turns this fast path off"))
    func theStringLayoutIsVerifiedOnThisToolchain() {
        #expect(StringRepresentation.isVerified)
    }

    /// Keys and string values of every length around the inline limit,
    /// ASCII and not, with embedded NULs in values, decode to exactly the
    /// strings that were encoded, also when the string ends the input (fewer
    /// than 16 bytes left to load).
    @Test func stringsOfEveryLengthDecodeToThemselves() throws {
        let alphabets = ["abcdefghijklmnopqrstuvwxyz0123456789", "éüçñøß中文字符😀abc"]
        for alphabet in alphabets {
            for length in 0...40 {
                let text = String(alphabet.prefix(length))
                let key = text.isEmpty ? "k" : text
                var document = BSONDocument()
                document.append(key, .string(text))
                document.append(key + "2", .string(text + "\u{0}" + text))  // an embedded NUL is valid
                let bytes = document.bsonBytes()
                let decoded = try BSONDocument(bson: bytes)
                #expect(decoded == document)
                #expect(decoded.keys == [key, key + "2"])
                #expect(decoded[key] == .string(text))
                // Exact-size copies so that nothing past the document can be read.
                let exact = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
                defer { exact.deallocate() }
                bytes.withUnsafeBytes { exact.copyMemory(from: $0) }
                #expect(try BSONDocument(bson: UnsafeRawBufferPointer(exact)) == document)
                // The decoded strings behave as any other: compare, hash, grow.
                if case .string(let value)? = decoded[key] {
                    #expect(value.hashValue == text.hashValue && value.utf8.count == text.utf8.count)
                    var grown = value
                    grown += "!"
                    #expect(grown == text + "!" && value == text)
                }
            }
        }
    }

    /// Keys of every length encode to the same bytes whether the buffer
    /// has ample room or exactly enough (the two-word store of short keys
    /// needs 17 bytes of room), and a NUL anywhere in a key, short or long,
    /// is reported and cut.
    @Test func keysOfEveryLengthEncodeTheSameWithAnyRoom() throws {
        for alphabet in [
            "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789", "éüçñøß中文字符😀abcdefghijklmnopqrstuvwxyz",
        ] {
            for length in 0...70 {
                let key = String(alphabet.unicodeScalars.prefix(length).map(Character.init))
                let document: BSONDocument = [key: .int32(7)]
                let expected = try document.checkedBSONBytes()
                var tight: [UInt8] = []
                tight.reserveCapacity(expected.count)  // at least this much; maybe no more
                document.appendBSON(to: &tight)
                #expect(tight == expected)
                #expect(try BSONDocument(bson: expected).keys == [key])
                let scalarCount = key.unicodeScalars.count  // the second alphabet runs out before 70
                guard scalarCount > 0 else { continue }
                // A NUL at the start, the middle and the end of the key.
                for cut in Set([0, scalarCount / 2, scalarCount - 1]) {
                    var scalars = Array(key.unicodeScalars)
                    scalars[cut] = "\u{0}"
                    let withNul = String(String.UnicodeScalarView(scalars))
                    let bad: BSONDocument = [withNul: .int32(7)]
                    #expect { try bad.checkedBSONBytes() } throws: { ($0 as? BSONError)?.code == .nulInCString }
                    let cutKey = String(String.UnicodeScalarView(scalars[..<cut]))
                    #expect(try BSONDocument(bson: bad.bsonBytes()).keys == [cutKey])
                }
            }
        }
    }

    /// A key whose NUL lies past the end of its document is rejected as
    /// unterminated, even though the bytes after the document hold a NUL
    /// within reach of the two-word fast path.
    @Test func aKeyMustEndInsideItsDocument() throws {
        // {"a": {"bc": null}} with the inner document's length cut so that
        // its key runs into the outer document's bytes.
        var inner = BSONDocument()
        inner.append("bc", .null)
        var outer = BSONDocument()
        outer.append("a", .document(inner))
        outer.append("zzzzzzzz", .int32(0))
        var bytes = outer.bsonBytes()
        // Outer: 4 length, 0x03, "a\0", then the inner document at 7.
        let innerLength = Int(bytes[7])
        bytes[7] = 7  // ends at "c": the key's NUL is outside
        #expect(innerLength > 7)
        // The key is reported unterminated (not read on past the document).
        let error = #expect(throws: BSONError.self) { try BSONDocument(bson: bytes) }
        #expect(error?.code == .missingTerminator)
        #expect(error?.offset == 12)
    }

    /// A field's key and value lie where the field buffer's `deinit` reads
    /// them.
    @Test func fieldLayoutIsWhatTheBufferAssumes() {
        #expect(MemoryLayout<BSONDocument.Field>.offset(of: \.key) == BSONFieldBuffer.keyOffset)
        #expect(MemoryLayout<BSONDocument.Field>.offset(of: \.value) == BSONFieldBuffer.valueOffset)
    }

    /// Copies share fields until one changes; then only that copy changes.
    @Test func documentsAreValues() throws {
        let decoded = try BSONDocument(bson: (["a": .int32(1), "long key of twenty b": "x"] as BSONDocument).bsonBytes())
        var copy = decoded
        copy["a"] = .int32(2)
        copy.append("b", .string(String(repeating: "y", count: 100)))
        copy["long key of twenty b"] = nil
        #expect(decoded["a"] == .int32(1) && decoded.count == 2 && decoded["long key of twenty b"] == "x")
        #expect(copy["a"] == .int32(2) && copy.keys == ["a", "b"])
        var empty = BSONDocument()
        let alsoEmpty = empty
        for index in 0..<100 { empty.append("k\(index)", .int64(Int64(index))) }  // grows past every capacity
        #expect(alsoEmpty.isEmpty && empty.count == 100 && empty["k99"] == .int64(99))
        empty.reserveCapacity(500)
        #expect(empty.count == 100 && empty.fields.map(\.key) == (0..<100).map { "k\($0)" })
    }

    /// A document that fails half way frees what it had decoded and
    /// throws; the same bytes whole decode fine afterwards.
    @Test func aFailureHalfWayThroughADocumentThrows() throws {
        let document: BSONDocument = [
            "first key, long enough": "a string value of some length",
            "n": .int64(1), "bad": .bool(true),
        ]
        var bytes = document.bsonBytes()
        bytes[bytes.count - 2] = 7  // the boolean's byte
        #expect(throws: BSONError.self) { try BSONDocument(bson: bytes) }
        bytes[bytes.count - 2] = 1
        #expect(try BSONDocument(bson: bytes) == document)
    }

    /// An interned key stays what it was after its slot moved on to other
    /// keys: its bytes are never reused.
    @Test func internedKeysOutliveTheirSlot() throws {
        let key = "a key long enough to be interned"
        let kept = try BSONDocument(bson: BSONKeyCacheTests.encoded(key, 1))
        for index in 0..<(BSONKeyCache.slotCount * 4) {
            _ = try BSONDocument(bson: BSONKeyCacheTests.encoded("another long key, number \(index)", 2))
        }
        #expect(kept.keys == [key])
        #expect(kept[key] == .int32(1))
    }

    /// The lookup by a key's first 16 bytes answers only when the whole
    /// interned key is there followed by its NUL inside the limit; keys
    /// that share their first 16 bytes take turns in its slot without being
    /// interned again.
    @Test(.disabled(if: PortableFallbacks.areForced, "DATAINGEST_PORTABLE=1 turns this fast path off"))
    func theFirstSixteenBytesLookupConfirmsTheWholeKey() {
        let arena = BSONKeyArena(chunkSize: 64, chunkLimit: 10)  // two keys per chunk
        let cache = BSONKeyCache(arena: arena)
        func intern(_ key: String) -> String {
            Array(key.utf8).withUnsafeBytes { cache.string(validated: $0, isASCII: true) }
        }
        func lookUp(_ input: [UInt8], before limit: Int) -> (String, length: Int)? {
            input.withUnsafeBytes { raw in
                cache.interned(
                    startingWith: raw.load(as: UInt64.self), raw.load(fromByteOffset: 8, as: UInt64.self),
                    at: raw.baseAddress!, before: limit)
            }
        }
        let a = "measurementChannel_A"
        let b = "measurementChannel_B_value"
        #expect(intern(a) == a)
        let input = Array(a.utf8) + [0, 0x10, 0x20]
        #expect(lookUp(input, before: input.count).map { [$0.0] } == [a])
        #expect(lookUp(input, before: input.count).map(\.length) == a.utf8.count)
        // The NUL must lie inside the limit.
        #expect(lookUp(input, before: a.utf8.count) == nil)
        // The same 16 first bytes, but a longer key: no NUL where the interned one ends.
        let longer = Array((a + "x").utf8) + [0]
        #expect(lookUp(longer, before: longer.count) == nil)
        // The same first 16 bytes and length, one byte different.
        var changed = input
        changed[18] = UInt8(ascii: "Z")
        #expect(lookUp(changed, before: changed.count) == nil)
        // Two keys sharing their first 16 bytes take turns; neither is interned twice.
        for _ in 0..<20 {
            #expect(intern(b) == b && intern(a) == a)
        }
        #expect(arena.chunksHandedOut == 1)
    }

    /// Records whose long keys share their first 16 bytes decode to their
    /// own keys, round after round.
    @Test func keysSharingTheirFirstSixteenBytesDecodeToThemselves() throws {
        let keys = [
            "temperatureSensorA", "temperatureSensorB", "temperatureSensorAB", "temperatureSensor_A_celsius",
            "temperatureSensor",
        ]
        var document = BSONDocument()
        for (index, key) in keys.enumerated() { document.append(key, .int32(Int32(index))) }
        let bytes = document.bsonBytes()
        for _ in 0..<5 {
            let decoded = try BSONDocument(bson: bytes)
            #expect(decoded.keys == keys)
            #expect(decoded == document)
            for key in keys.shuffled() {
                #expect(try BSONDocument(bson: BSONKeyCacheTests.encoded(key, 9)).keys == [key])
            }
        }
    }

    /// Once the arena's budget is spent, keys are still decoded exactly, as
    /// ordinary strings.
    @Test(.disabled(if: PortableFallbacks.areForced, "DATAINGEST_PORTABLE=1 turns this fast path off"))
    func keysStayCorrectWhenTheArenaIsSpent() {
        let arena = BSONKeyArena(chunkSize: 64, chunkLimit: 1)
        let cache = BSONKeyCache(arena: arena)
        let keys = (0..<20).map { "key number \($0) of some length" }
        for round in 0..<2 {
            for key in keys {
                let bytes = Array(key.utf8)
                let decoded = bytes.withUnsafeBytes { cache.string(validated: $0, isASCII: true) }
                #expect(decoded == key, "round \(round)")
            }
        }
        #expect(arena.chunksHandedOut == 1)
        #expect(arena.chunk() == nil)
    }
}
