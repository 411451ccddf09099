/// Extended JSON text could not be parsed into BSON: what went wrong, and
/// where.
///
/// ```swift
/// do {
///     _ = try BSONDocument(extendedJSON: #"{"a": {"$oid": 42}}"#)
/// } catch {
///     print(error)  // Extended JSON invalidWrapper at a: $oid needs a string …
/// }
/// ```
public struct ExtendedJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The text is not JSON (RFC 8259): a stray character, an
        /// unterminated string, a bad escape or number.
        public static let syntax = Code(rawValue: "syntax")
        /// Objects and arrays are nested deeper than the configured limit.
        public static let depthLimitExceeded = Code(rawValue: "depthLimitExceeded")
        /// An object uses a type wrapper key (`$oid`, `$date`, …) but its
        /// keys or value types are not the ones the wrapper needs.
        public static let invalidWrapper = Code(rawValue: "invalidWrapper")
        /// A wrapper has the right shape but its content is not a valid
        /// value (bad hex, base64, number, date, UUID, Decimal128).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// A key or regular expression contains NUL, which BSON cannot
        /// store (keys and regex parts are C strings).
        public static let nulInCString = Code(rawValue: "nulInCString")
        /// The top-level JSON value is not an object, where a document
        /// was asked for.
        public static let notADocument = Code(rawValue: "notADocument")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The byte offset in the UTF-8 text, for syntax errors; nil for errors
    /// found after the JSON itself was read.
    public var offset: Int?
    /// The keys (and array indexes) leading to the value that failed,
    /// outermost first; empty for the top level.
    public var path: [String]
    /// What happened, for people.
    public var message: String

    public init(code: Code, offset: Int? = nil, path: [String] = [], message: String) {
        self.code = code
        self.offset = offset
        self.path = path
        self.message = message
    }

    public var description: String {
        var text = "Extended JSON \(code) error"
        if let offset { text += " at byte \(offset)" }
        if !path.isEmpty { text += " at \(path.joined(separator: "."))" }
        return text + ": " + message
    }
}
