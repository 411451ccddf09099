/// An error reading or writing the segment format.
///
/// Readers never trap on hostile bytes: every malformation is one of these
/// codes, with the offset in the decompressed segment stream where it was found.
///
/// ```swift
/// do { while let event = try reader.next() { ... } }
/// catch let error as SegmentError where error.code == .checksumMismatch { /* quarantine */ }
/// ```
import IngestSupport
public struct SegmentError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as an extensible code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let rawValue: String
        /// Creates a code with the given name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The stream does not start with the segment magic bytes.
        public static let badMagic = Code("badMagic")
        /// The header names a format version this reader does not know.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// A frame's CRC-32 does not match its bytes.
        public static let checksumMismatch = Code("checksumMismatch")
        /// The stream ends inside a frame, or a sealed segment lacks its end frame.
        public static let truncated = Code("truncated")
        /// A frame is longer than ``SegmentReader/Limits/maxFramePayloadBytes``.
        public static let frameTooLarge = Code("frameTooLarge")
        /// A frame's contents are inconsistent (bad BSON length prefix, bad name,
        /// wrong record count, unknown frame type, frames out of order).
        public static let malformedFrame = Code("malformedFrame")
        /// The gzip layer failed (see ``SegmentError/gzipCode``).
        public static let compression = Code("compression")
        /// An invalid argument was passed to a writer (such as an empty collection name).
        public static let invalidArgument = Code("invalidArgument")
        /// Reading or writing a file failed (see ``SegmentError/errno``).
        public static let io = Code("io")
        /// An encrypted block failed authentication: the file was changed,
        /// damaged, or its blocks were moved (never decoded into objects).
        public static let authenticationFailed = Code("authenticationFailed")
        /// An encrypted file was written with another key.
        public static let wrongKey = Code("wrongKey")
        /// An encrypted file was read without a key.
        public static let keyRequired = Code("keyRequired")
        /// A plaintext file was read with a key set.
        public static let notEncrypted = Code("notEncrypted")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// Offset in the decompressed segment stream, when known.
    public var offset: Int?
    /// The gzip error code, for ``Code/compression``.
    package var gzipCode: GzipError.Code?
    /// The `errno` of a failed system call, for ``Code/io``.
    public var errno: Int32?

    /// Creates an error.
    package init(code: Code, message: String, offset: Int? = nil, gzipCode: GzipError.Code? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
        self.gzipCode = gzipCode
        self.errno = errno
    }

    public var description: String {
        var text = "SegmentError.\(code): \(message)"
        if let offset { text += " [offset \(offset)]" }
        if let gzipCode { text += " [gzip: \(gzipCode)]" }
        if let errno { text += " [errno \(errno)]" }
        return text
    }
}
