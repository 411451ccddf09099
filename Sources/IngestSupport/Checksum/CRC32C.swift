import CZlib

/// CRC-32C (the Castagnoli polynomial of iSCSI, ext4 and SSE4.2's `crc32`
/// instruction): the frame checksum of segment format version 2.
///
/// On x86-64 CPUs with SSE4.2 it is the `crc32` instruction, 8 bytes at a
/// time (the C shim in `CZlib`); elsewhere, and with
/// `DATAINGEST_PORTABLE=1` (``PortableFallbacks``), a slice-by-8 table. The
/// two give the same values; the choice is made once per process.
///
/// ```swift
/// let crc = CRC32C.checksum(bytes)                  // whole buffer
/// let same = CRC32C.update(CRC32C.checksum(a), b)   // incremental: crc(a + b)
/// ```
package enum CRC32C {
    /// Whether the hardware instruction is used (false on other CPUs and
    /// with `DATAINGEST_PORTABLE=1`).
    package static let usesHardware: Bool = !PortableFallbacks.areForced && dataingest_crc32c_hardware_available() != 0

    /// The CRC-32C of `bytes`, continuing from `crc` (0 to start).
    @inline(__always)
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        if usesHardware { return dataingest_crc32c_hardware(crc, base, bytes.count) }
        return portableUpdate(crc, bytes)
    }

    /// The CRC-32C of a byte array.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(0, $0) }
    }

    /// The CRC-32C of raw memory.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { update(0, bytes) }

    /// The table-driven form (slice-by-8: eight bytes per step through eight
    /// 256-entry tables), whatever the CPU; ``update(_:_:)`` uses it when the
    /// instruction is not available or not wanted.
    package static func portableUpdate(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        var state = ~crc
        var index = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { t in
            while count - index >= 8 {
                let low = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt32.self)) ^ state
                let high = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self))
                state =
                    t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                state = t[Int((state ^ UInt32(base.load(fromByteOffset: index, as: UInt8.self))) & 0xFF)] ^ (state >> 8)
                index += 1
            }
        }
        return ~state
    }

    /// Eight tables of 256 entries: table 0 is the byte-at-a-time table of
    /// the reflected polynomial 0x82F63B78; table k advances table k-1 by one
    /// more zero byte.
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 != 0 ? 0x82F6_3B78 ^ (c >> 1) : c >> 1 }
            t[n] = c
        }
        for k in 1..<8 {
            for n in 0..<256 {
                let previous = t[(k - 1) * 256 + n]
                t[k * 256 + n] = t[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return t
    }()
}
