import CCrypto
import IngestSupport

/// AES-256-GCM over the blocks of one encrypted segment file.
///
/// A block is `length (u32 LE) | flags (u8) | counter (u64 LE) | CRC-32 of
/// those 13 bytes (u32 LE) | ciphertext (length bytes) | tag (16 bytes)`.
/// The nonce is 4 zero bytes followed by the counter (little-endian); the
/// counter increases with every block the cipher encrypts, even one whose
/// write later failed, so a nonce is never used twice under the file's key.
/// The additional authenticated data is the file header, the block's offset
/// in the file (u64 LE) and its first 13 bytes: a block moved, reordered,
/// copied into another file or cut from the end of a sealed file fails.
///
/// Not thread-safe: one owner at a time (the commit leader, the sealer, a reader).
package final class SegmentCipher {
    /// Bytes before a block's ciphertext.
    package static let blockHeaderSize = 17
    /// Bytes of the GCM tag after the ciphertext.
    package static let tagSize = 16
    /// Bytes a block adds around its plaintext.
    package static let blockOverhead = blockHeaderSize + tagSize
    /// Block flag: the last block of a sealed file.
    package static let finalFlag: UInt8 = 1

    /// The file's header.
    package let header: EncryptedFileHeader
    let headerBytes: [UInt8]
    private let context: OpaquePointer
    private let encrypting: Bool
    private var nextCounter: UInt64 = 0

    /// A cipher for the file described by `header`, encrypting (writer) or decrypting (reader).
    /// - Throws: ``SegmentError/Code/wrongKey`` when `header` was written with
    ///   another key; ``SegmentError/Code/io`` if libcrypto fails.
    package init(header: EncryptedFileHeader, key: SegmentEncryptionKey, encrypting: Bool) throws(SegmentError) {
        guard Crypto.constantTimeEqual(header.keyCheck, key.checkValue) else {
            throw SegmentError(
                code: .wrongKey,
                message: "segment \(header.segmentNumber) was encrypted with another key: open the store with the key it was written with",
                offset: 0)
        }
        guard let context = EVP_CIPHER_CTX_new() else {
            throw SegmentError(code: .io, message: "EVP_CIPHER_CTX_new failed")
        }
        self.context = context
        self.header = header
        self.headerBytes = header.bytes
        self.encrypting = encrypting
        var fileKey = header.fileKey(key)
        defer { fileKey.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        let ok = fileKey.withUnsafeBufferPointer { k in
            encrypting
                ? EVP_EncryptInit_ex(context, dataingest_evp_aes_256_gcm(), nil, nil, nil) == 1
                    && dataingest_gcm_set_ivlen(context, 12) == 1
                    && EVP_EncryptInit_ex(context, nil, nil, k.baseAddress, nil) == 1
                : EVP_DecryptInit_ex(context, dataingest_evp_aes_256_gcm(), nil, nil, nil) == 1
                    && dataingest_gcm_set_ivlen(context, 12) == 1
                    && EVP_DecryptInit_ex(context, nil, nil, k.baseAddress, nil) == 1
        }
        guard ok else {
            EVP_CIPHER_CTX_free(context)
            throw SegmentError(code: .io, message: "initializing AES-256-GCM failed")
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Appends one encrypted block of `plaintext`, to be written at `fileOffset`.
    package func appendBlock(_ plaintext: UnsafeRawBufferPointer, fileOffset: Int, final: Bool = false, to out: inout [UInt8])
        throws(SegmentError)
    {
        precondition(encrypting, "a decrypting SegmentCipher cannot encrypt")
        guard plaintext.count <= Int(UInt32.max) else {
            throw SegmentError(code: .invalidArgument, message: "an encrypted block holds at most 4 GiB")
        }
        let counter = nextCounter
        nextCounter += 1
        let start = out.count
        SegmentFormat.appendLE(UInt32(plaintext.count), to: &out)
        out.append(final ? Self.finalFlag : 0)
        SegmentFormat.appendLE(counter, to: &out)
        let crc = out.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[start..<(start + 13)])) }
        SegmentFormat.appendLE(crc, to: &out)
        out.append(contentsOf: repeatElement(0, count: plaintext.count + Self.tagSize))
        let ok = out.withUnsafeMutableBytes { raw -> Bool in
            let base = raw.baseAddress! + start
            guard setNonce(counter, encrypt: true),
                addAAD(fileOffset: fileOffset, blockHeader: UnsafeRawBufferPointer(start: base, count: 13), encrypt: true)
            else { return false }
            var produced: Int32 = 0
            if plaintext.count > 0 {
                guard
                    EVP_EncryptUpdate(
                        context, (base + 17).assumingMemoryBound(to: UInt8.self), &produced,
                        plaintext.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(plaintext.count)) == 1,
                    Int(produced) == plaintext.count
                else { return false }
            }
            var tail: Int32 = 0
            guard EVP_EncryptFinal_ex(context, (base + 17 + plaintext.count).assumingMemoryBound(to: UInt8.self), &tail) == 1 else {
                return false
            }
            return dataingest_gcm_get_tag(context, (base + 17 + plaintext.count).assumingMemoryBound(to: UInt8.self), Int32(Self.tagSize))
                == 1
        }
        guard ok else {
            out.removeSubrange(start...)
            throw SegmentError(code: .io, message: "AES-256-GCM encryption failed")
        }
    }

    /// Decrypts a whole block (`block` holds exactly its bytes) read at
    /// `fileOffset`, replacing `plaintext`'s contents. Returns the block's flags.
    /// - Throws: ``SegmentError/Code/authenticationFailed`` when the tag does
    ///   not match (the block was changed, moved or comes from another file).
    package func openBlock(_ block: UnsafeRawBufferPointer, fileOffset: Int, into plaintext: inout [UInt8]) throws(SegmentError) -> UInt8 {
        precondition(!encrypting, "an encrypting SegmentCipher cannot decrypt")
        let length = Int(SegmentFormat.readLE(UInt32.self, block, 0))
        precondition(block.count == length + Self.blockOverhead)
        let flags = block[4]
        let counter = SegmentFormat.readLE(UInt64.self, block, 5)
        plaintext.removeAll(keepingCapacity: true)
        plaintext.append(contentsOf: repeatElement(0, count: length))
        var tag = Array(block[(Self.blockHeaderSize + length)...])
        let ok = plaintext.withUnsafeMutableBytes { out -> Bool in
            guard setNonce(counter, encrypt: false),
                addAAD(fileOffset: fileOffset, blockHeader: UnsafeRawBufferPointer(rebasing: block[0..<13]), encrypt: false)
            else { return false }
            var produced: Int32 = 0
            if length > 0 {
                guard
                    EVP_DecryptUpdate(
                        context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &produced,
                        (block.baseAddress! + Self.blockHeaderSize).assumingMemoryBound(to: UInt8.self), Int32(length)) == 1
                else { return false }
            }
            guard tag.withUnsafeMutableBufferPointer({ dataingest_gcm_set_tag(context, $0.baseAddress, Int32(Self.tagSize)) }) == 1 else {
                return false
            }
            var tail: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)
            return EVP_DecryptFinal_ex(context, &scratch, &tail) == 1
        }
        guard ok else {
            // Never hand out bytes that failed authentication.
            plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            plaintext.removeAll(keepingCapacity: true)
            throw SegmentError(
                code: .authenticationFailed,
                message:
                    "block at byte \(fileOffset) of encrypted segment \(header.segmentNumber) failed authentication: the file was changed or damaged",
                offset: fileOffset)
        }
        return flags
    }

    // Both run once per block on the commit path: stack buffers, no arrays.
    private func setNonce(_ counter: UInt64, encrypt: Bool) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { nonce in
            let raw = UnsafeMutableRawBufferPointer(nonce)
            raw.storeBytes(of: UInt32(0), toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: counter.littleEndian, toByteOffset: 4, as: UInt64.self)
            return encrypt
                ? EVP_EncryptInit_ex(context, nil, nil, nil, nonce.baseAddress) == 1
                : EVP_DecryptInit_ex(context, nil, nil, nil, nonce.baseAddress) == 1
        }
    }

    /// AAD = file header || block offset (u64 LE) || block bytes 0..<13.
    private func addAAD(fileOffset: Int, blockHeader: UnsafeRawBufferPointer, encrypt: Bool) -> Bool {
        var produced: Int32 = 0
        let update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate
        let headerOK = headerBytes.withUnsafeBufferPointer { update(context, nil, &produced, $0.baseAddress, Int32($0.count)) == 1 }
        guard headerOK else { return false }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { tail in
            let raw = UnsafeMutableRawBufferPointer(tail)
            raw.storeBytes(of: UInt64(fileOffset).littleEndian, toByteOffset: 0, as: UInt64.self)
            UnsafeMutableRawBufferPointer(rebasing: raw[8..<21]).copyMemory(from: UnsafeRawBufferPointer(rebasing: blockHeader[0..<13]))
            return update(context, nil, &produced, tail.baseAddress, 21) == 1
        }
    }
}
