/// Decrypts an encrypted segment file block by block for ``SegmentReader``
/// (or for a ``GzipByteSource`` over a sealed file). Only bytes of blocks
/// whose tag verified are ever returned; memory holds one block.
///
/// ```swift
/// let source = try DecryptingByteSource(FileByteSource(path: path), key: key, kind: .sealed)
/// let reader = try SegmentReader(source: GzipByteSource(source))
/// ```
///
/// Errors tell a torn tail from damage: a file that ends inside a block
/// (or inside its header) is ``SegmentError/Code/truncated``; a block header
/// with a bad CRC is `checksumMismatch`; a complete block whose tag fails is
/// `authenticationFailed`; a sealed file without its final block is `truncated`.
/// After an error, every later read throws the same error.
import IngestSupport
package final class DecryptingByteSource: SegmentByteSource {
    /// The file's header (read by `init`).
    package let header: EncryptedFileHeader
    /// File offset just after the last block that verified.
    package private(set) var fileOffset = EncryptedFileHeader.byteCount
    /// Plaintext bytes produced so far.
    package private(set) var plaintextOffset = 0
    /// The plaintext and file offsets at the end of every verified block, in
    /// order (kept only when `recordBlockEnds` is set): recovery maps the last
    /// complete transaction to the file offset to cut at.
    package private(set) var blockEnds: [(plaintext: Int, file: Int)] = []

    private let upstream: SegmentByteSource
    private let cipher: SegmentCipher
    private let requiresFinal: Bool
    private let recordBlockEnds: Bool
    private let maxBlockBytes: Int
    private var sawFinal = false
    // The first error, thrown again by every later read: after a failed block
    // the buffers no longer describe the stream (a retry would hand out a
    // negative count, or read a torn file's end as a clean one).
    private var failure: Error?
    private var plaintext: [UInt8] = []
    private var plaintextStart = 0
    private var block: [UInt8] = []
    // Read-ahead from upstream: the active segment's blocks are often ~100
    // bytes, and two read(2) calls per block would dominate sealing.
    // Allocated on first use, so an init that throws leaks nothing.
    private var input: UnsafeMutableRawBufferPointer?
    private var inputStart = 0
    private var inputEnd = 0
    private var upstreamDone = false

    /// Reads and checks the header of the file `upstream` delivers.
    /// - Parameters:
    ///   - kind: the content expected (a mismatch is `malformedFrame`).
    ///   - requiresFinal: `true` for sealed files, which must end with a final block.
    ///   - maxBlockBytes: the largest block plaintext accepted. Default 1 GiB.
    /// - Throws: ``SegmentError`` — `truncated`, `notEncrypted`, `badMagic`,
    ///   `checksumMismatch`, `unsupportedVersion`, `wrongKey`, `malformedFrame`.
    package init(
        _ upstream: SegmentByteSource, key: SegmentEncryptionKey, kind: EncryptedFileHeader.Kind,
        requiresFinal: Bool? = nil, recordBlockEnds: Bool = false, maxBlockBytes: Int = 1 << 30
    ) throws {
        self.upstream = upstream
        self.requiresFinal = requiresFinal ?? (kind == .sealed)
        self.recordBlockEnds = recordBlockEnds
        self.maxBlockBytes = maxBlockBytes
        var raw = [UInt8](repeating: 0, count: EncryptedFileHeader.byteCount)
        let n = try Self.readFully(upstream, into: &raw, from: 0, count: raw.count)
        if n >= 8 && raw[0..<8].elementsEqual(SegmentFormat.magic) {
            throw SegmentError(
                code: .notEncrypted,
                message: "the file is a plaintext segment, but an encryption key is set: it was written without encryption", offset: 0)
        }
        if n < raw.count {
            guard raw[0..<min(n, 8)].elementsEqual(EncryptedFileHeader.magic.prefix(min(n, 8))) else {
                throw SegmentError(code: .badMagic, message: "not an encrypted segment file (bad magic bytes)", offset: 0)
            }
            throw SegmentError(
                code: .truncated, message: "the encrypted file ends inside its header (\(n) of \(raw.count) bytes)", offset: 0)
        }
        let header = try raw.withUnsafeBytes { try EncryptedFileHeader(parsing: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        guard header.kind == kind else {
            throw SegmentError(
                code: .malformedFrame, message: "the encrypted file holds content kind \(header.kind.rawValue), expected \(kind.rawValue)",
                offset: 10)
        }
        self.header = header
        self.cipher = try SegmentCipher(header: header, key: key, encrypting: false)
        if recordBlockEnds { blockEnds.append((0, fileOffset)) }
    }

    deinit { input?.deallocate() }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        if let failure { throw failure }
        while plaintextStart == plaintext.count {
            do {
                guard try nextBlock() else { return 0 }
            } catch {
                failure = error
                throw error
            }
        }
        let count = min(buffer.count, plaintext.count - plaintextStart)
        plaintext.withUnsafeBytes { raw in
            buffer.baseAddress!.copyMemory(from: raw.baseAddress! + plaintextStart, byteCount: count)
        }
        plaintextStart += count
        return count
    }

    /// Reads, checks and decrypts the next block; `false` at the end.
    private func nextBlock() throws -> Bool {
        let headerSize = SegmentCipher.blockHeaderSize
        if block.count < headerSize { block = [UInt8](repeating: 0, count: max(headerSize, 64 << 10)) }
        let n = try readBuffered(into: &block, from: 0, count: headerSize)
        if n == 0 {
            if requiresFinal && !sawFinal {
                throw SegmentError(
                    code: .truncated, message: "the encrypted sealed segment ends without its final block", offset: fileOffset)
            }
            return false
        }
        if sawFinal {
            throw SegmentError(code: .malformedFrame, message: "bytes follow the final encrypted block", offset: fileOffset)
        }
        guard n == headerSize else {
            throw SegmentError(code: .truncated, message: "the encrypted file ends inside a block header", offset: fileOffset)
        }
        let crc = SegmentFormat.readLE(UInt32.self, block, 13)
        guard crc == block.withUnsafeBytes({ CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[0..<13])) }) else {
            throw SegmentError(
                code: .checksumMismatch, message: "an encrypted block header is damaged (checksum mismatch)", offset: fileOffset)
        }
        let length = Int(SegmentFormat.readLE(UInt32.self, block, 0))
        guard length <= maxBlockBytes else {
            throw SegmentError(
                code: .frameTooLarge, message: "an encrypted block declares \(length) bytes, the limit is \(maxBlockBytes)",
                offset: fileOffset)
        }
        let total = headerSize + length + SegmentCipher.tagSize
        // Grow the buffer as bytes arrive (at most 1 MiB ahead), so a length
        // that the file does not back never allocates more than it holds.
        var have = headerSize
        while have < total {
            let target = min(total, have + (1 << 20))
            if block.count < target { block.append(contentsOf: repeatElement(0, count: target - block.count)) }
            let wanted = target - have
            guard try readBuffered(into: &block, from: have, count: wanted) == wanted else {
                throw SegmentError(
                    code: .truncated, message: "the encrypted file ends inside a block of \(total) bytes", offset: fileOffset)
            }
            have = target
        }
        let flags = try block.withUnsafeBytes {
            try cipher.openBlock(UnsafeRawBufferPointer(rebasing: $0[0..<total]), fileOffset: fileOffset, into: &plaintext)
        }
        if flags & SegmentCipher.finalFlag != 0 {
            guard requiresFinal else {
                throw SegmentError(code: .malformedFrame, message: "a final block in an encrypted active segment", offset: fileOffset)
            }
            sawFinal = true
        }
        plaintextStart = 0
        fileOffset += total
        plaintextOffset += length
        if recordBlockEnds { blockEnds.append((plaintextOffset, fileOffset)) }
        if block.count > 1 << 20 { block = [] }  // do not keep one huge block's buffer
        return true
    }

    /// The file offset of the end of the block whose plaintext ends at
    /// `plaintextOffset` (or the last block end before it).
    package func fileOffset(forPlaintextOffset offset: Int) -> Int {
        var low = 0
        var high = blockEnds.count - 1
        var best = EncryptedFileHeader.byteCount
        while low <= high {
            let mid = (low + high) / 2
            if blockEnds[mid].plaintext <= offset {
                best = blockEnds[mid].file
                low = mid + 1
            } else {
                high = mid - 1
            }
        }
        return best
    }

    /// Up to `count` bytes into `buffer` at `start` through the read-ahead buffer.
    private func readBuffered(into buffer: inout [UInt8], from start: Int, count: Int) throws -> Int {
        let input = self.input ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        self.input = input
        var done = 0
        while done < count {
            if inputStart == inputEnd {
                guard !upstreamDone else { break }
                inputStart = 0
                inputEnd = try upstream.read(into: input)
                if inputEnd == 0 {
                    upstreamDone = true
                    break
                }
            }
            let take = min(count - done, inputEnd - inputStart)
            buffer.withUnsafeMutableBytes { out in
                (out.baseAddress! + start + done).copyMemory(from: input.baseAddress! + inputStart, byteCount: take)
            }
            inputStart += take
            done += take
        }
        return done
    }

    private static func readFully(_ source: SegmentByteSource, into buffer: inout [UInt8], from start: Int, count: Int) throws -> Int {
        var done = 0
        while done < count {
            let n = try buffer.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[(start + done)..<(start + count)]))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
