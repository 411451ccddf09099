import Foundation
import Testing
@testable import IngestCore

@Suite struct ObjectIdTests {
    @Test func layoutFollowsTheSpecification() {
        let before = UInt32(Date().timeIntervalSince1970)
        let a = ObjectId.generate()
        let b = ObjectId.generate()
        let after = UInt32(Date().timeIntervalSince1970)
        // ObjectId reads time(), which glibc serves from the kernel's coarse
        // clock: up to one tick behind Date(), so across a second boundary it
        // may still say the second before `before`.
        #expect(((before - 1)...after).contains(a.timestampSeconds))
        // The 5 process bytes are shared, the 3-byte counter advances by one.
        #expect(a.bytes[4..<9] == b.bytes[4..<9])
        let counterA = Int(a.bytes[9]) << 16 | Int(a.bytes[10]) << 8 | Int(a.bytes[11])
        let counterB = Int(b.bytes[9]) << 16 | Int(b.bytes[10]) << 8 | Int(b.bytes[11])
        #expect((counterA + 1) & 0xFF_FFFF == counterB)
    }

    @Test func hexRoundTripsAndRejectsBadText() throws {
        let id = try ObjectId(hex: "56E1FC72E0C917E9C4714161")
        #expect(id.hex == "56e1fc72e0c917e9c4714161")
        #expect(id.bytes == [0x56, 0xe1, 0xfc, 0x72, 0xe0, 0xc9, 0x17, 0xe9, 0xc4, 0x71, 0x41, 0x61])
        #expect(ObjectId(bytes: id.bytes) == id)
        #expect(throws: ObjectIdError.self) { try ObjectId(hex: "56e1fc72e0c917e9c471416") }
        #expect(throws: ObjectIdError.self) { try ObjectId(hex: "56e1fc72e0c917e9c471416g") }
    }

    @Test func orderFollowsBytes() throws {
        let small = try ObjectId(hex: "000000000000000000000001")
        let middle = try ObjectId(hex: "0000000000000000ff000000")
        let large = try ObjectId(hex: "010000000000000000000000")
        #expect(small < middle && middle < large)
        #expect([large, small, middle].sorted() == [small, middle, large])
    }

    @Test func generateIsUniqueAcrossThreads() async {
        let ids = await withTaskGroup(of: [ObjectId].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<10_000).map { _ in ObjectId.generate() } }
            }
            var all: [ObjectId] = []
            for await chunk in group { all += chunk }
            return all
        }
        #expect(Set(ids).count == 40_000)
    }

    @Test func codableUsesHex() throws {
        let id = try ObjectId(hex: "56e1fc72e0c917e9c4714161")
        let json = try JSONEncoder().encode([id])
        #expect(String(decoding: json, as: UTF8.self) == #"["56e1fc72e0c917e9c4714161"]"#)
        #expect(try JSONDecoder().decode([ObjectId].self, from: json) == [id])
    }
}
