import Foundation
import Testing
@testable import IngestCore

/// The decoder's per-thread table of long keys (`BSONKeyCache`) must never
/// change what a document decodes to: every key comes back exactly as it was
/// encoded, whatever was decoded before on the same or another thread.
@Suite struct BSONKeyCacheTests {
    /// A one-field document's bytes.
    static func encoded(_ key: String, _ value: Int32) -> [UInt8] {
        var document = BSONDocument()
        document.append(key, .int32(value))
        return document.bsonBytes()
    }

    /// Keys from 14 to 70 bytes (below, inside and above the cached range),
    /// ASCII and two-byte UTF-8, more than the table has slots.
    static let keys: [String] = (14...70).flatMap { length in
        [
            "k" + String(repeating: "x", count: length - 2) + "\(length % 10)",
            String(repeating: "é", count: length / 2),
        ]  // 2 bytes each
    }

    @Test func everyKeyDecodesToItselfTwice() throws {
        var document = BSONDocument()
        for (index, key) in Self.keys.enumerated() { document.append(key, .int32(Int32(index))) }
        let bytes = document.bsonBytes()
        for _ in 0..<2 {  // the second pass hits (or collides in) the table
            let decoded = try BSONDocument(bson: bytes)
            #expect(decoded.keys.map { $0 } == Self.keys)
            #expect(decoded == document)
        }
    }

    /// Same length, same first and last eight bytes (the words the slot is
    /// chosen by), different middle: one slot, so only the byte comparison
    /// tells them apart.
    @Test func keysThatShareTheirSlotStayDistinct() throws {
        let keys: [String] = (0..<26).map { (i: Int) -> String in
            let letter = String(UnicodeScalar(UInt8(97 + i)))
            return "prefix01" + letter + "mid" + "suffix01"
        }
        for round in 0..<3 {
            for key in keys.shuffled() {
                let decoded = try BSONDocument(bson: Self.encoded(key, Int32(round)))
                #expect(decoded.keys.first == key)
                #expect(decoded[key] == .int32(Int32(round)))
            }
        }
    }

    /// Threads decoding different keys of equal length at once each get
    /// their own keys back.
    @Test func threadsDecodeTheirOwnKeys() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    let key = "thread-\(thread)-" + String(repeating: "k", count: 20)
                    let bytes = Self.encoded(key, Int32(thread))
                    for _ in 0..<2_000 {
                        let decoded = try BSONDocument(bson: bytes)
                        guard decoded.keys.first == key else {
                            Issue.record("thread \(thread) decoded \(decoded.keys.first ?? "nothing")")
                            return
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A long key that is not valid UTF-8 is still rejected, also after a
    /// valid key of the same length and slot was cached.
    @Test func invalidLongKeysAreStillRejected() throws {
        let valid = String(repeating: "a", count: 20)
        var bytes = Self.encoded(valid, 1)
        _ = try BSONDocument(bson: bytes)
        bytes[5 + 10] = 0xFF  // inside the key: type byte at 4, key from 5
        #expect(throws: BSONError.self) { try BSONDocument(bson: bytes) }
    }
}
