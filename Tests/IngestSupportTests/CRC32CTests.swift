import Foundation
import Testing
@testable import IngestSupport

@Suite struct CRC32CTests {
    /// The check value of CRC-32C (RFC 3720, iSCSI) and its test vectors.
    @Test func knownValues() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum([]) == 0)
        for bytes in [Array("123456789".utf8), (0..<32).map { UInt8($0) }] {
            #expect(bytes.withUnsafeBytes { CRC32C.portableUpdate(0, $0) } == CRC32C.checksum(bytes))
        }
    }

    /// The instruction (where the CPU has it) and the table give the same
    /// values at every length and alignment, and continue incrementally.
    @Test func hardwareAndTableAgree() {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        let bytes: [UInt8] = (0..<600).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        bytes.withUnsafeBytes { raw in
            for start in 0..<9 {
                for count in 0..<(raw.count - start) where count < 70 || count % 37 == 0 {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)])
                    let table = CRC32C.portableUpdate(0, slice)
                    #expect(CRC32C.update(0, slice) == table, "start \(start), count \(count)")
                    let half = count / 2
                    let incremental = CRC32C.update(
                        CRC32C.update(0, UnsafeRawBufferPointer(rebasing: slice[..<half])), UnsafeRawBufferPointer(rebasing: slice[half...])
                    )
                    #expect(incremental == table)
                }
            }
        }
    }

    /// `DATAINGEST_PORTABLE=1` forces the table; otherwise an x86-64 CPU with
    /// SSE4.2 uses the instruction.
    @Test func theChoiceFollowsTheSwitchAndTheCPU() {
        if PortableFallbacks.areForced {
            #expect(!CRC32C.usesHardware)
        } else {
            #if arch(x86_64)
            let hasSSE42 = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.contains(" sse4_2") ?? false
            #expect(CRC32C.usesHardware == hasSSE42)
            #endif
        }
    }
}
