import IngestSupport

/// A 256-bit key that encrypts a segment store's files at rest with
/// AES-256-GCM (layout in Docs/SegmentFormat.md, threat model in Docs/Security.md).
///
/// The app owns the key: generate it once (``random()``), keep it in the
/// platform's secret store, and pass the same 32 bytes every time the store
/// is opened. A lost key means the pending data cannot be read again.
///
/// ```swift
/// let key = try SegmentEncryptionKey(bytes: keyBytesFromKeychain)   // exactly 32 bytes
/// ```
public struct SegmentEncryptionKey: Sendable, Hashable {
    /// The required key size: 32 bytes (256 bits).
    public static let byteCount = 32

    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// A key from exactly 32 bytes.
    /// - Throws: ``SegmentError/Code/invalidArgument`` naming the expected size.
    ///   A 64-byte key (the size the Realm SDKs used) is refused with a message
    ///   saying so: it is never truncated silently.
    public init(bytes: some Collection<UInt8>) throws(SegmentError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            var message = "an encryption key must be exactly \(Self.byteCount) bytes (256 bits, AES-256-GCM), got \(array.count) bytes"
            if array.count == 64 {
                message +=
                    "; 64-byte keys as the Realm SDKs used are not accepted and are never truncated: "
                    + "generate a new 32-byte key (for example with SegmentEncryptionKey.random()) for DataIngest's store"
            }
            throw SegmentError(code: .invalidArgument, message: message)
        }
        self.bytes = array
    }

    /// A new key from libcrypto's cryptographically secure generator.
    /// - Throws: ``SegmentError/Code/io`` if the generator fails.
    public static func random() throws(SegmentError) -> SegmentEncryptionKey {
        try SegmentEncryptionKey(bytes: randomBytes(byteCount))
    }

    /// `count` bytes from libcrypto's secure generator, failing as a segment I/O error.
    static func randomBytes(_ count: Int) throws(SegmentError) -> [UInt8] {
        do {
            return try Crypto.randomBytes(count)
        } catch {
            throw SegmentError(code: .io, message: "libcrypto's random generator failed: \(error)")
        }
    }

    /// The key check value stored in every encrypted file and in the store's
    /// `KEY_CHECK` file: the first 16 bytes of
    /// HMAC-SHA256(key, "DataIngest key check v1"). It tells a wrong key
    /// apart from damage without revealing the key.
    public var checkValue: [UInt8] {
        Array(Crypto.hmacSHA256(key: bytes, message: Array("DataIngest key check v1".utf8)).prefix(16))
    }

    // Keys stay out of logs and error messages.
    public var description: String { "SegmentEncryptionKey(32 bytes)" }
}

extension SegmentEncryptionKey: CustomStringConvertible, CustomDebugStringConvertible {
    public var debugDescription: String { description }
}
