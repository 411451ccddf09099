/// A BSON document could not be decoded (or encoded): what went wrong, and
/// the byte offset in the input where it was found.
///
/// ```swift
/// do {
///     _ = try BSONDocument(bson: bytes)
/// } catch let error as BSONError where error.code == .truncated {
///     print("incomplete document:", error)
/// }
/// ```
public struct BSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code's name, e.g. "truncated".
        public var rawValue: String
        /// A code with the given name; use the static codes below.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input ends before a value or document it declares.
        public static let truncated = Code(rawValue: "truncated")
        /// A declared length (document, string, binary, code with scope)
        /// is negative, too small, or does not match the bytes it covers.
        public static let invalidLength = Code(rawValue: "invalidLength")
        /// A string or key is not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalidUTF8")
        /// An element has a type byte BSON does not define.
        public static let invalidType = Code(rawValue: "invalidType")
        /// A document does not end with 0x00, or a string or key is not
        /// NUL-terminated where its length says it ends.
        public static let missingTerminator = Code(rawValue: "missingTerminator")
        /// Documents and arrays are nested deeper than the configured limit.
        public static let depthLimitExceeded = Code(rawValue: "depthLimitExceeded")
        /// A boolean byte is neither 0 nor 1.
        public static let invalidBoolean = Code(rawValue: "invalidBoolean")
        /// Bytes follow the end of the top-level document.
        public static let trailingBytes = Code(rawValue: "trailingBytes")
        /// A key or a regular expression contains a NUL byte, which BSON
        /// cannot encode (keys and regex parts are C strings).
        public static let nulInCString = Code(rawValue: "nulInCString")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The byte offset in the input where the problem was found (for
    /// encoding errors: in the output written so far).
    public var offset: Int
    /// What happened, for people.
    public var message: String

    /// An error with its code, byte offset and message.
    public init(code: Code, offset: Int, message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    public var description: String {
        "BSON error \(code) at byte \(offset): \(message)"
    }
}
