/// A changeset that cannot be decoded: truncated, malformed or over a
/// limit, with the byte offset of the fault. Nothing of such a changeset is
/// used; the client gets ``SyncErrorCode/badChangeset``.
///
/// ```swift
/// do { _ = try ChangesetDecoder.decodeAll(bytes) }
/// catch { print(error.offset, error.message) }   // 17 "the changeset ends inside a string"
/// ```
public struct ChangesetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The changeset ends inside an instruction.
        public static let truncated = Code(rawValue: "truncated")
        /// A value that the encoding does not allow (an unknown code or type,
        /// an integer too long or out of range, a string index not interned).
        public static let malformed = Code(rawValue: "malformed")
        /// A string that is not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalidUTF8")
        /// A size over a ``ChangesetDecoder/Limits`` limit.
        public static let limitExceeded = Code(rawValue: "limitExceeded")
    }

    /// What went wrong.
    public var code: Code
    /// The byte offset in the changeset.
    public var offset: Int
    /// What happened, short.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, offset: Int, message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    public var description: String { "changeset \(code) at byte \(offset): \(message)" }
}
