/// Writes an encrypted file as a stream: the header, then blocks of at most
/// `blockBytes` plaintext bytes, the last one flagged final. The sealer and
/// the quarantine use it for `.seg.gz` files; memory holds one block.
///
/// ```swift
/// let writer = try EncryptedFileWriter(header: header, key: key) { try write(fd, $0) }
/// try writer.write(gzipBytes)
/// try writer.finish()
/// ```
package final class EncryptedFileWriter {
    private let cipher: SegmentCipher
    private let output: (UnsafeRawBufferPointer) throws -> Void
    private let blockBytes: Int
    private var pending: [UInt8] = []
    private var encrypted: [UInt8] = []
    private var fileOffset = 0
    private var finished = false

    /// Starts a file with `header` (written with the first block).
    package init(
        header: EncryptedFileHeader, key: SegmentEncryptionKey, blockBytes: Int = 64 << 10,
        output: @escaping (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        self.cipher = try SegmentCipher(header: header, key: key, encrypting: true)
        self.output = output
        self.blockBytes = max(blockBytes, 1)
        encrypted = header.bytes
        fileOffset = encrypted.count
        pending.reserveCapacity(self.blockBytes)
    }

    /// Appends plaintext; full blocks are encrypted and written.
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes
        while !rest.isEmpty {
            let take = min(rest.count, blockBytes - pending.count)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if pending.count == blockBytes { try emit(final: false) }
        }
    }

    /// Appends plaintext held in an array.
    package func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Encrypts what is left as the final block and writes it.
    package func finish() throws {
        guard !finished else { return }
        try emit(final: true)
        finished = true
    }

    private func emit(final: Bool) throws {
        // `encrypted` still holds the header before the first block, whose
        // bytes `fileOffset` already counts: advance by the block alone.
        let blockStart = encrypted.count
        try pending.withUnsafeBytes { try cipher.appendBlock($0, fileOffset: fileOffset, final: final, to: &encrypted) }
        pending.removeAll(keepingCapacity: true)
        try encrypted.withUnsafeBytes { try output($0) }
        fileOffset += encrypted.count - blockStart
        encrypted.removeAll(keepingCapacity: true)
    }
}
