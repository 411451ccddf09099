/// An error of ``LogWriter`` or ``IngestRecorder``.
public struct LoggingError: Error, Sendable, CustomStringConvertible {
    /// What went wrong; extensible.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The writer's synced realm could not be opened.
        public static let openFailed = Code(rawValue: "openFailed")
        /// The writer was shut down; nothing more is accepted.
        public static let shutDown = Code(rawValue: "shutDown")
        /// A recorded object could not be committed (schema, storage).
        public static let commitFailed = Code(rawValue: "commitFailed")
    }

    /// The code.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The error underneath (a ``RealmError`` or store error), if any.
    public var underlyingError: (any Error & Sendable)?

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String, underlyingError: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
    }

    public var description: String { "LoggingError(\(code.rawValue)): \(message)" }
}
