import CZlib

/// One-call gzip compression and decompression, and the CRC-32 used for
/// framing checksums.
///
/// ```swift
/// let packed = try Gzip.compress(Array("hello".utf8))
/// let unpacked = try Gzip.decompress(packed, limits: GzipLimits(maxOutputBytes: 1 << 20))
/// ```
package enum Gzip {
    /// The default compression level. Level 1 is chosen by measurement on
    /// segment data (WeatherSensor-like BSON): it compresses several times faster
    /// than level 6 for a few percent more bytes; see Docs/SegmentFormat.md.
    package static let defaultLevel = 1

    /// Compresses `bytes` into one complete gzip member.
    /// `wrapper` `.zlib` writes a zlib (RFC 1950) stream instead.
    package static func compress(_ bytes: [UInt8], level: Int = defaultLevel, wrapper: CompressionWrapper = .gzip) throws -> [UInt8] {
        let deflater = try GzipDeflater(level: level, wrapper: wrapper)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 4 + 64)
        try deflater.compress(bytes, appendingTo: &out)
        try deflater.finish(appendingTo: &out)
        return out
    }

    /// Decompresses complete gzip data (one or more members) within `limits`.
    /// - Throws: ``GzipError`` with code `corrupt`, `truncated` or `limitExceeded`.
    /// `wrapper` `.zlib` reads one zlib (RFC 1950) stream instead.
    package static func decompress(
        _ bytes: [UInt8], limits: GzipLimits = GzipLimits(), wrapper: CompressionWrapper = .gzip
    ) throws -> [UInt8] {
        try bytes.withUnsafeBytes { (raw) throws in try decompress(raw, limits: limits, wrapper: wrapper) }
    }

    /// Decompresses complete gzip (or zlib) data from raw memory within `limits`.
    package static func decompress(
        _ bytes: UnsafeRawBufferPointer, limits: GzipLimits = GzipLimits(), wrapper: CompressionWrapper = .gzip
    ) throws -> [UInt8] {
        let inflater = try GzipInflater(limits: limits, wrapper: wrapper)
        var out: [UInt8] = []
        out.reserveCapacity(min(bytes.count * 4, limits.maxOutputBytes, 64 << 20))
        try inflater.inflate(bytes, appendingTo: &out)
        try inflater.finish()
        return out
    }
}

/// CRC-32 (IEEE 802.3, the polynomial gzip and PNG use).
///
/// From 64 bytes on, on x86-64 CPUs with PCLMULQDQ, the multiples of 16
/// bytes are folded with carry-less multiplication (the C shim in `CZlib`,
/// about 0.44 instructions per byte against zlib's 3.9); the rest, other CPUs and
/// `DATAINGEST_PORTABLE=1` (``PortableFallbacks``) use zlib's `crc32_z`.
/// Both give the same values.
///
/// ```swift
/// let crc = CRC32.checksum(bytes)                 // whole buffer
/// let same = CRC32.update(CRC32.checksum(a), b)   // incremental: crc(a + b)
/// ```
package enum CRC32 {
    /// Whether the carry-less multiplication is used (false on other CPUs
    /// and with `DATAINGEST_PORTABLE=1`).
    package static let usesFolding: Bool = !PortableFallbacks.areForced && dataingest_crc32_fold_available() != 0

    /// The CRC-32 of `bytes`, continuing from `crc` (0 to start).
    @inline(__always)
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        var crc = crc
        var offset = 0
        if bytes.count >= 64 && usesFolding {
            offset = bytes.count & ~15
            crc = ~dataingest_crc32_fold(~crc, base, offset)
            if offset == bytes.count { return crc }
        }
        return zlibUpdate(crc, UnsafeRawBufferPointer(start: base + offset, count: bytes.count - offset))
    }

    /// zlib's `crc32_z`, whatever the CPU.
    package static func zlibUpdate(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return UInt32(truncatingIfNeeded: crc32_z(UInt(crc), base.assumingMemoryBound(to: Bytef.self), bytes.count))
    }

    /// The CRC-32 of a byte array.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(0, $0) }
    }

    /// The CRC-32 of raw memory.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { update(0, bytes) }
}
