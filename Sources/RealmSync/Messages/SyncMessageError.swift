/// A sync message that cannot be parsed: bad syntax, an unknown type, a
/// limit exceeded or a body that does not decompress. It names the Realm
/// error code to send back and the byte offset in the message.
///
/// ```swift
/// do { let message = try ClientMessage(parsing: bytes) }
/// catch { send(ServerMessage.error(ErrorMessage(code: error.syncCode, message: error.message, tryAgain: false, session: 0))) }
/// ```
public struct SyncMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A message type this side does not know.
        public static let unknownMessage = Code(rawValue: "unknownMessage")
        /// A header line that does not follow the message's grammar.
        public static let badSyntax = Code(rawValue: "badSyntax")
        /// A size over a configured limit.
        public static let limitExceeded = Code(rawValue: "limitExceeded")
        /// A compressed body that does not inflate to its declared size.
        public static let badDecompression = Code(rawValue: "badDecompression")
        /// A changeset header inside an upload or download body that does not parse.
        public static let badChangesetHeader = Code(rawValue: "badChangesetHeader")
        /// A changeset longer than what is left of the body.
        public static let badChangesetSize = Code(rawValue: "badChangesetSize")
        /// A JSON body that is not the JSON the message requires.
        public static let badJSON = Code(rawValue: "badJSON")
    }

    /// What went wrong.
    public var code: Code
    /// The byte offset in the message (or in its decompressed body, for
    /// changeset headers) where the fault was found.
    public var offset: Int
    /// What happened, short.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, offset: Int, message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    /// The Realm error code that reports this fault to the peer.
    public var syncCode: SyncErrorCode {
        switch code {
        case .unknownMessage: return .unknownMessage
        case .limitExceeded: return .limitsExceeded
        case .badDecompression: return .badDecompression
        case .badChangesetHeader: return .badChangesetHeaderSyntax
        case .badChangesetSize: return .badChangesetSize
        default: return .badSyntax
        }
    }

    public var description: String { "sync message \(code) at byte \(offset): \(message)" }
}

/// Limits on the parts of sync messages, against hostile peers. Sizes are
/// checked from the header line before any body is read or inflated.
///
/// ```swift
/// let limits = SyncMessageLimits(maxBodyBytes: 4 << 20)
/// let message = try ClientMessage(parsing: bytes, limits: limits)
/// ```
public struct SyncMessageLimits: Sendable, Hashable {
    /// The longest header line, newline included. Default 1 KiB (the
    /// longest real header, `download`, is about 200 bytes).
    public var maxHeaderBytes: Int
    /// The largest `bind` JSON data (or path). Default 1 KiB, realm-core's limit.
    public var maxBindDataBytes: Int
    /// The largest `bind` token. Default 8 KiB (realm-core allows 2 KiB;
    /// Flexible Sync clients send the token in the upgrade, not here).
    public var maxTokenBytes: Int
    /// The largest query body (`ident`, `query`). Default 1 MiB.
    public var maxQueryBytes: Int
    /// The largest upload or download body, compressed or not, and the
    /// largest declared uncompressed size. Default 16 MiB, the Realm
    /// client's hard limit for one upload message.
    public var maxBodyBytes: Int
    /// The largest JSON or text body of `json_error`, `error`,
    /// `log_message` and `query_error`. Default 64 KiB.
    public var maxTextBytes: Int
    /// The most changesets in one upload or download body. Default 1,000,000.
    public var maxChangesets: Int

    /// Creates limits; every argument has a documented default.
    public init(
        maxHeaderBytes: Int = 1024, maxBindDataBytes: Int = 1024, maxTokenBytes: Int = 8192,
        maxQueryBytes: Int = 1 << 20, maxBodyBytes: Int = 16 << 20, maxTextBytes: Int = 64 << 10,
        maxChangesets: Int = 1_000_000
    ) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBindDataBytes = maxBindDataBytes
        self.maxTokenBytes = maxTokenBytes
        self.maxQueryBytes = maxQueryBytes
        self.maxBodyBytes = maxBodyBytes
        self.maxTextBytes = maxTextBytes
        self.maxChangesets = maxChangesets
    }
}
