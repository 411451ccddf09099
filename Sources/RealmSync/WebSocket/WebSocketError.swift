/// A WebSocket handshake or framing error: what the peer did wrong, the
/// close code to answer with, and where in the byte stream it happened.
///
/// ```swift
/// do { while let event = try reader.next() { handle(event) } }
/// catch { send(WebSocketFrameEncoder.closeFrame(code: error.closeCode, reason: error.message)) }
/// ```
public struct WebSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A frame that breaks RFC 6455 (reserved bits or opcodes, an unmasked
        /// client frame, a fragmented or long control frame, a bad length, a
        /// continuation without a message, a bad close payload).
        public static let protocolViolation = Code(rawValue: "protocolViolation")
        /// A text message or close reason that is not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalidUTF8")
        /// A frame or message larger than the configured maximum.
        public static let messageTooBig = Code(rawValue: "messageTooBig")
        /// An upgrade request that is not a valid WebSocket handshake (answer
        /// HTTP 400).
        public static let badHandshake = Code(rawValue: "badHandshake")
        /// An upgrade request for a WebSocket version other than 13 (answer
        /// HTTP 426 with `Sec-WebSocket-Version: 13`).
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
    }

    /// What went wrong.
    public var code: Code
    /// The close code to send the peer (for handshake errors, the HTTP
    /// answer is 400 and this is ``WebSocketCloseCode/protocolError``).
    public var closeCode: WebSocketCloseCode
    /// The byte offset in the input stream where the fault was found (0 for
    /// handshake errors).
    public var offset: Int
    /// What happened, short enough for a close frame's reason (at most 123 bytes
    /// are sent).
    public var message: String

    /// Creates an error.
    public init(_ code: Code, closeCode: WebSocketCloseCode, offset: Int = 0, message: String) {
        self.code = code
        self.closeCode = closeCode
        self.offset = offset
        self.message = message
    }

    public var description: String { "WebSocket \(code) at byte \(offset): \(message)" }
}
