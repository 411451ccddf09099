/// A streaming gzip (RFC 1952) compressor with the project's own deflate
/// (RFC 1951) encoder, for the segment store's default level 1: greedy
/// LZ77 with one hash table (one position per 4-byte hash, 32 KiB window),
/// then per block of up to 65,535 input bytes the smallest of a dynamic
/// Huffman block, a static one or a stored one.
///
/// The output is ordinary gzip: zlib's inflate, `gzip -d` and every reader
/// of the segment format read it. zlib still does all inflating and every
/// other level; ``GzipDeflater`` is the zlib-backed compressor. This one
/// does less work per byte than zlib's level 1: of the positions a match
/// covers only its first and last are hashed, matches are compared 8 bytes
/// at a time, and the gzip trailer's CRC-32 is ``CRC32/update(_:_:)``
/// (carry-less multiplication where the CPU has it). Not thread-safe: one
/// compressor per thread.
///
/// ```swift
/// let deflater = FastDeflater()
/// var out: [UInt8] = []
/// try bytes.withUnsafeBytes { try deflater.compress($0, appendingTo: &out) }
/// try deflater.finish(appendingTo: &out)   // out is now a complete .gz member
/// ```
package final class FastDeflater: GzipCompressing {
    /// The largest block: a stored block's length is a u16.
    static let blockBytes = 65_535
    static let windowBytes = 32_768
    static let hashBits = 15
    static let minMatch = 4
    static let maxMatch = 258

    /// History (up to the window) plus input not yet encoded, from stream
    /// position `bufferStart` on; 16 bytes of slack after the capacity for
    /// 8-byte loads near the end.
    private let buffer: UnsafeMutablePointer<UInt8>
    private let bufferCapacity = 32_768 + 4 * 65_536
    private var bufferStart = 0
    private var bufferEnd = 0
    /// The stream position of the next byte to encode.
    private var position = 0
    /// Stream positions (relative to `tableBase`) by the hash of the 4 bytes there.
    private let table: UnsafeMutablePointer<Int32>
    private var tableBase = 0
    /// One block's literals and matches: a literal is its byte, a match
    /// `1 << 31 | length << 15 | (distance - 1)`.
    private let tokens: UnsafeMutablePointer<UInt32>
    private var encoding: DeflateBlockEncoder
    private var crc: UInt32 = 0
    private var headerWritten = false
    private var finished = false

    package init() {
        buffer = .allocate(capacity: bufferCapacity + 16)
        buffer.initialize(repeating: 0, count: bufferCapacity + 16)
        table = .allocate(capacity: 1 << Self.hashBits)
        table.initialize(repeating: Int32.min, count: 1 << Self.hashBits)
        tokens = .allocate(capacity: Self.blockBytes + 1)
        encoding = DeflateBlockEncoder()
    }

    deinit {
        buffer.deallocate()
        table.deallocate()
        tokens.deallocate()
        encoding.deallocate()
    }

    /// Compresses `input`, appending the blocks that are complete.
    package func compress(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws {
        guard !finished else {
            throw GzipError(code: .invalidArgument, message: "compress after finish; make a new compressor for a new member")
        }
        writeHeaderIfNeeded(&output)
        guard let base = input.baseAddress, input.count > 0 else { return }
        crc = CRC32.update(crc, input)
        var offset = 0
        while offset < input.count {
            if bufferEnd - bufferStart == bufferCapacity { slide() }
            let n = min(input.count - offset, bufferCapacity - (bufferEnd - bufferStart))
            (buffer + (bufferEnd - bufferStart)).update(
                from: base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), count: n)
            bufferEnd += n
            offset += n
            while bufferEnd - position >= Self.blockBytes {
                encodeBlock(count: Self.blockBytes, final: false, output: &output)
            }
        }
    }

    /// Compresses a byte array (convenience for ``compress(_:appendingTo:)``).
    package func compress(_ input: [UInt8], appendingTo output: inout [UInt8]) throws {
        try input.withUnsafeBytes { (raw) throws in try compress(raw, appendingTo: &output) }
    }

    /// Ends the member: the last block and the gzip trailer.
    package func finish(appendingTo output: inout [UInt8]) throws {
        guard !finished else { return }
        writeHeaderIfNeeded(&output)
        encodeBlock(count: bufferEnd - position, final: true, output: &output)
        encoding.flushToByte()
        encoding.writeLE32(crc)
        encoding.writeLE32(UInt32(truncatingIfNeeded: bufferEnd))
        encoding.drain(into: &output)
        finished = true
    }

    private func writeHeaderIfNeeded(_ output: inout [UInt8]) {
        guard !headerWritten else { return }
        headerWritten = true
        // ID1 ID2, CM 8 (deflate), no flags, MTIME 0, XFL 4 (fastest), OS 3 (Unix), as zlib writes at level 1.
        output.append(contentsOf: [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 4, 3] as [UInt8])
    }

    /// Keeps the window before `position` and drops older bytes.
    private func slide() {
        let keepFrom = max(bufferStart, position - Self.windowBytes)
        let shift = keepFrom - bufferStart
        guard shift > 0 else { return }
        buffer.update(from: buffer + shift, count: bufferEnd - keepFrom)
        bufferStart = keepFrom
    }

    /// Finds the matches of `count` bytes from `position` and writes them
    /// as one block.
    private func encodeBlock(count: Int, final: Bool, output: inout [UInt8]) {
        if position - tableBase > 1 << 30 {
            // Keeps the table's 32-bit offsets in range on very long streams.
            table.update(repeating: Int32.min, count: 1 << Self.hashBits)
            tableBase = position
        }
        let start = position - bufferStart
        let tokenCount = findMatches(from: start, to: start + count)
        encoding.writeBlock(
            tokens: tokens, count: tokenCount, raw: UnsafeBufferPointer(start: buffer + start, count: count), final: final)
        encoding.drain(into: &output)
        position += count
    }

    /// Greedy matching over `buffer[start..<end]`: at each position the
    /// last position with the same 4-byte hash, taken when its 4 bytes are
    /// equal and it is within the window; a match is extended 8 bytes at a
    /// time, up to 258 bytes and not past `end`. Fills `tokens` and the
    /// symbol counts; returns the number of tokens.
    private func findMatches(from start: Int, to end: Int) -> Int {
        let p = buffer
        let table = self.table
        let tokens = self.tokens
        let litlen = encoding.litlenFrequencies
        let dist = encoding.distanceFrequencies
        litlen.update(repeating: 0, count: DeflateTables.litlenSymbols)
        dist.update(repeating: 0, count: DeflateTables.distanceSymbols)
        let lengthSymbol = DeflateTables.shared.lengthSymbol
        let distanceSymbol = DeflateTables.shared.distanceSymbol
        // Stream position of buffer[0], relative to the table's base.
        let relative = bufferStart &- tableBase
        var n = 0
        var i = start
        let lastHashed = end &- Self.minMatch
        while i <= lastHashed {
            let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt32.self)
            let h = Int(truncatingIfNeeded: (word &* 0x1E35_A7BD) >> UInt32(32 - Self.hashBits))
            let here = relative &+ i
            let candidate = Int(table[h]) &- relative
            table[h] = Int32(truncatingIfNeeded: here)
            let distance = i &- candidate
            if distance <= Self.windowBytes && distance > 0
                && UnsafeRawPointer(p + candidate).loadUnaligned(as: UInt32.self) == word
            {
                let limit = min(Self.maxMatch, end &- i)
                var length = Self.minMatch
                while length &+ 8 <= limit {
                    let x =
                        UnsafeRawPointer(p + i + length).loadUnaligned(as: UInt64.self)
                        ^ UnsafeRawPointer(p + candidate + length).loadUnaligned(as: UInt64.self)
                    if x != 0 {
                        length &+= x.littleEndian.trailingZeroBitCount >> 3
                        break
                    }
                    length &+= 8
                }
                if length &+ 8 > limit {
                    while length < limit && p[i &+ length] == p[candidate &+ length] { length &+= 1 }
                }
                tokens[n] = 1 << 31 | UInt32(truncatingIfNeeded: length) << 15 | UInt32(truncatingIfNeeded: distance &- 1)
                n &+= 1
                litlen[257 &+ Int(lengthSymbol[length])] &+= 1
                let d = distance &- 1
                dist[Int(d < 256 ? distanceSymbol[d] : distanceSymbol[256 &+ (d >> 7)])] &+= 1
                // Hash the match's last position too, so the next record's
                // match can start there; the positions in between are skipped.
                let last = i &+ length &- 1
                if length > Self.minMatch && last <= lastHashed {
                    let w = UnsafeRawPointer(p + last).loadUnaligned(as: UInt32.self)
                    table[Int(truncatingIfNeeded: (w &* 0x1E35_A7BD) >> UInt32(32 - Self.hashBits))] =
                        Int32(truncatingIfNeeded: relative &+ last)
                }
                i &+= length
            } else {
                let byte = p[i]
                tokens[n] = UInt32(byte)
                n &+= 1
                litlen[Int(byte)] &+= 1
                i &+= 1
            }
        }
        while i < end {
            let byte = p[i]
            tokens[n] = UInt32(byte)
            n &+= 1
            litlen[Int(byte)] &+= 1
            i &+= 1
        }
        litlen[256] = 1  // end of block
        return n
    }
}

/// A gzip member compressor: zlib's (``GzipDeflater``) or the project's own
/// level-1 encoder (``FastDeflater``).
package protocol GzipCompressing: AnyObject {
    /// Compresses `input`, appending the compressed bytes produced so far.
    func compress(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws
    /// Compresses a byte array.
    func compress(_ input: [UInt8], appendingTo output: inout [UInt8]) throws
    /// Appends the rest and the gzip trailer.
    func finish(appendingTo output: inout [UInt8]) throws
}

extension GzipDeflater: GzipCompressing {}

extension Gzip {
    /// The gzip compressor for `level`: the project's own encoder
    /// (``FastDeflater``) for level 1, zlib for the others.
    package static func makeCompressor(level: Int) throws -> any GzipCompressing {
        level == 1 ? FastDeflater() : try GzipDeflater(level: level)
    }
}
