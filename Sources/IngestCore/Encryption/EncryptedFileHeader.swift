/// The plaintext header of an encrypted segment file (72 bytes; the byte
/// layout is in Docs/SegmentFormat.md, "Encrypted files").
///
/// Every block of the file authenticates these bytes, so a header changed on
/// disk (another store id, segment number or salt) fails authentication.
///
/// ```swift
/// let header = try EncryptedFileHeader(kind: .sealed, storeId: id, segmentNumber: 42, key: key)
/// ```
import IngestSupport
package struct EncryptedFileHeader: Sendable, Hashable {
    /// What the decrypted bytes are.
    package struct Kind: Sendable, Hashable {
        /// The byte stored in the header.
        package let rawValue: UInt8
        /// Creates a kind from its byte.
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// An uncompressed segment stream (the active segment, `N.active`).
        package static let stream = Kind(rawValue: 1)
        /// A gzip-compressed sealed segment (`N.seg.gz` and quarantine files).
        package static let sealed = Kind(rawValue: 2)
    }

    /// `"DIENC\r\n\u{1A}"`, unlike the plaintext segment magic `"DISEG…"`.
    package static let magic: [UInt8] = [0x44, 0x49, 0x45, 0x4E, 0x43, 0x0D, 0x0A, 0x1A]
    /// The envelope version this code writes and reads.
    package static let version: UInt16 = 1
    /// The only algorithm so far: AES-256-GCM.
    package static let algorithmAES256GCM: UInt8 = 1
    /// The header's size in bytes.
    package static let byteCount = 72

    /// What the decrypted bytes are.
    package var kind: Kind
    /// The store that wrote the file.
    package var storeId: SegmentStoreID
    /// The segment's number.
    package var segmentNumber: UInt64
    /// 16 random bytes: with the store id and segment number they derive the
    /// file's own key, so no two files share a key (and so no nonce is ever
    /// used twice under one key).
    package var salt: [UInt8]
    /// ``SegmentEncryptionKey/checkValue`` of the key that wrote the file.
    package var keyCheck: [UInt8]

    /// A header for a new file with a fresh random salt.
    package init(kind: Kind, storeId: SegmentStoreID, segmentNumber: UInt64, key: SegmentEncryptionKey) throws(SegmentError) {
        self.kind = kind
        self.storeId = storeId
        self.segmentNumber = segmentNumber
        self.salt = try SegmentEncryptionKey.randomBytes(16)
        self.keyCheck = key.checkValue
    }

    init(kind: Kind, storeId: SegmentStoreID, segmentNumber: UInt64, salt: [UInt8], keyCheck: [UInt8]) {
        self.kind = kind
        self.storeId = storeId
        self.segmentNumber = segmentNumber
        self.salt = salt
        self.keyCheck = keyCheck
    }

    /// The 72 header bytes.
    package var bytes: [UInt8] {
        var out = Self.magic
        out.reserveCapacity(Self.byteCount)
        SegmentFormat.appendLE(Self.version, to: &out)
        out.append(kind.rawValue)
        out.append(Self.algorithmAES256GCM)
        out.append(contentsOf: storeId.bytes)
        SegmentFormat.appendLE(segmentNumber, to: &out)
        out.append(contentsOf: salt)
        out.append(contentsOf: keyCheck)
        let crc = out.withUnsafeBytes { CRC32.update(0, $0) }
        SegmentFormat.appendLE(crc, to: &out)
        return out
    }

    /// Parses and checks the 72 header bytes.
    /// - Throws: ``SegmentError`` — `badMagic` (with a hint when the bytes are a
    ///   plaintext segment), `checksumMismatch`, `unsupportedVersion`.
    package init(parsing raw: UnsafeRawBufferPointer) throws(SegmentError) {
        guard raw.count >= Self.byteCount else {
            throw SegmentError(code: .truncated, message: "the encrypted file ends inside its \(Self.byteCount)-byte header", offset: 0)
        }
        guard raw[0..<8].elementsEqual(Self.magic) else {
            if raw[0..<8].elementsEqual(SegmentFormat.magic) {
                throw SegmentError(
                    code: .notEncrypted,
                    message: "the file is a plaintext segment, but an encryption key is set: it was written without encryption", offset: 0)
            }
            throw SegmentError(code: .badMagic, message: "not an encrypted segment file (bad magic bytes)", offset: 0)
        }
        let crc = SegmentFormat.readLE(UInt32.self, raw, 68)
        guard crc == CRC32.update(0, UnsafeRawBufferPointer(rebasing: raw[0..<68])) else {
            throw SegmentError(code: .checksumMismatch, message: "the encrypted file's header is damaged (checksum mismatch)", offset: 0)
        }
        let version = SegmentFormat.readLE(UInt16.self, raw, 8)
        guard version == Self.version else {
            throw SegmentError(
                code: .unsupportedVersion,
                message: "encrypted file version \(version) is not supported (this reader knows \(Self.version)); update the software",
                offset: 0)
        }
        guard raw[11] == Self.algorithmAES256GCM else {
            throw SegmentError(
                code: .unsupportedVersion, message: "encryption algorithm \(raw[11]) is not supported (this reader knows 1, AES-256-GCM)",
                offset: 0)
        }
        self.init(
            kind: Kind(rawValue: raw[10]), storeId: SegmentStoreID(bytes: Array(raw[12..<28]))!,
            segmentNumber: SegmentFormat.readLE(UInt64.self, raw, 28),
            salt: Array(raw[36..<52]), keyCheck: Array(raw[52..<68]))
    }

    /// The file's own AES-256 key: HMAC-SHA256(key, "DataIngest file key v1" || header bytes 0..<52).
    func fileKey(_ key: SegmentEncryptionKey) -> [UInt8] {
        Crypto.hmacSHA256(key: key.bytes, message: Array("DataIngest file key v1".utf8) + bytes.prefix(52))
    }
}
