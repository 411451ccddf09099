/// Reads whole WebSocket messages from the client side of a connection:
/// feed it bytes as they arrive, take out complete messages and control
/// frames. Built on ``WebSocketFrameParser``, it adds the rules that span
/// frames:
///
/// - a fragmented text or binary message continues only with continuation
///   frames, which only occur inside such a message; control frames may come
///   in between;
/// - a message's total size stays within ``Configuration/maxMessageBytes``
///   (close code 1009), checked as each frame header arrives, before its
///   payload is buffered;
/// - text messages are valid UTF-8 (close code 1007), checked fragment by
///   fragment so that a bad message fails at its first bad byte;
/// - a close payload is empty or a code allowed on the wire plus a UTF-8
///   reason.
///
/// After a close frame the reader returns nothing more (RFC 6455: the peer
/// sends no data after its close frame). After an error every call throws
/// it again.
///
/// ```swift
/// var reader = WebSocketMessageReader()
/// reader.append(bytesFromSocket)
/// while let event = try reader.next() {
///     switch event {
///     case .binary(let message): handle(message)
///     case .ping(let payload): send(WebSocketFrameEncoder.frame(.pong, payload: payload))
///     case .close(let code, _): send(WebSocketFrameEncoder.closeFrame(code: code ?? .normalClosure))
///     case .text, .pong: break
///     }
/// }
/// ```
public struct WebSocketMessageReader: Sendable {
    /// Limits and rules.
    public struct Configuration: Sendable, Hashable {
        /// The largest message (all its fragments together). Default 16 MiB
        /// plus 4 KiB: Realm's limit for one upload message and its header line.
        public var maxMessageBytes: Int
        /// Whether frames must be masked (true for a server reading a
        /// client, the default).
        public var requireMasking: Bool

        /// Creates a configuration; every argument has a documented default.
        public init(maxMessageBytes: Int = (16 << 20) + 4096, requireMasking: Bool = true) {
            self.maxMessageBytes = maxMessageBytes
            self.requireMasking = requireMasking
        }
    }

    /// What the reader delivers.
    public enum Event: Sendable, Hashable {
        /// A complete text message (valid UTF-8).
        case text(String)
        /// A complete binary message.
        case binary([UInt8])
        /// A ping, to be answered with a pong carrying the same payload.
        case ping([UInt8])
        /// A pong.
        case pong([UInt8])
        /// The peer's close frame: its code (nil when the payload was empty,
        /// which means 1005) and reason. Answer with a close frame and close.
        case close(WebSocketCloseCode?, reason: String)
    }

    /// The limits in force.
    public let configuration: Configuration
    private var parser: WebSocketFrameParser
    private var message: [UInt8] = []
    private var messageOpcode: WebSocketOpcode?
    private var utf8 = UTF8Validator()
    private var closed = false
    private var failure: WebSocketError?

    /// A reader with the given configuration.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        parser = WebSocketFrameParser(
            configuration: .init(
                maxPayloadBytes: configuration.maxMessageBytes, requireMasking: configuration.requireMasking))
    }

    /// Whether the peer's close frame has been read.
    public var isClosed: Bool { closed }

    /// Bytes held: unparsed input plus the fragments of an unfinished message.
    public var bufferedByteCount: Int { parser.bufferedByteCount + message.count }

    /// Appends bytes read from the connection (ignored after a close frame).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if !closed { parser.append(bytes) }
    }

    /// Appends bytes read from the connection (ignored after a close frame).
    public mutating func append(_ bytes: [UInt8]) {
        if !closed { parser.append(bytes) }
    }

    /// The next message or control frame, or nil when more bytes are needed
    /// (or the peer has closed).
    /// - Throws: ``WebSocketError``; close the connection with its
    ///   ``WebSocketError/closeCode``.
    public mutating func next() throws(WebSocketError) -> Event? {
        if let failure { throw failure }
        do {
            return try readEvent()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func readEvent() throws(WebSocketError) -> Event? {
        while !closed {
            let offset = parser.streamOffset
            parser.dataPayloadLimit = configuration.maxMessageBytes - message.count
            guard let frame = try parser.nextFrame() else { return nil }
            switch frame.opcode {
            case .ping: return .ping(frame.payload)
            case .pong: return .pong(frame.payload)
            case .close:
                closed = true
                return try closeEvent(frame.payload, offset: offset)
            case .text, .binary:
                if messageOpcode != nil {
                    throw WebSocketError(
                        .protocolViolation, closeCode: .protocolError, offset: offset,
                        message: "a new \(frame.opcode) frame inside a fragmented message; expected a continuation")
                }
                messageOpcode = frame.opcode
                utf8 = UTF8Validator()
                if let event = try add(frame, offset: offset) { return event }
            case .continuation:
                if messageOpcode == nil {
                    throw WebSocketError(
                        .protocolViolation, closeCode: .protocolError, offset: offset,
                        message: "a continuation frame outside a fragmented message")
                }
                if let event = try add(frame, offset: offset) { return event }
            }
        }
        return nil
    }

    /// Adds a data frame to the current message; the message when it is complete.
    private mutating func add(_ frame: WebSocketFrame, offset: Int) throws(WebSocketError) -> Event? {
        if message.count + frame.payload.count > configuration.maxMessageBytes {
            throw WebSocketError(
                .messageTooBig, closeCode: .messageTooBig, offset: offset,
                message: "a message of more than \(configuration.maxMessageBytes) bytes")
        }
        if messageOpcode == .text && !utf8.validate(frame.payload) {
            throw WebSocketError(
                .invalidUTF8, closeCode: .invalidPayload, offset: offset,
                message: "a text message that is not valid UTF-8")
        }
        if message.isEmpty && frame.isFinal {
            // The usual case: a message in one frame, no copy.
            return try finish(frame.payload, offset: offset)
        }
        message.append(contentsOf: frame.payload)
        guard frame.isFinal else { return nil }
        let whole = message
        message = []
        return try finish(whole, offset: offset)
    }

    private mutating func finish(_ payload: [UInt8], offset: Int) throws(WebSocketError) -> Event {
        let opcode = messageOpcode
        messageOpcode = nil
        if opcode == .text {
            guard utf8.isComplete else {
                throw WebSocketError(
                    .invalidUTF8, closeCode: .invalidPayload, offset: offset,
                    message: "a text message that ends inside a UTF-8 character")
            }
            return .text(String(decoding: payload, as: UTF8.self))
        }
        return .binary(payload)
    }

    private func closeEvent(_ payload: [UInt8], offset: Int) throws(WebSocketError) -> Event {
        if payload.isEmpty { return .close(nil, reason: "") }
        guard payload.count >= 2 else {
            throw WebSocketError(
                .protocolViolation, closeCode: .protocolError, offset: offset,
                message: "a close frame with a 1-byte payload; a status code takes 2 bytes")
        }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isAllowedOnWire else {
            throw WebSocketError(
                .protocolViolation, closeCode: .protocolError, offset: offset,
                message: "close code \(code.rawValue) may not be sent on the wire")
        }
        let reason = payload[2...]
        var validator = UTF8Validator()
        guard reason.withUnsafeBytes({ validator.validate($0) }) && validator.isComplete else {
            throw WebSocketError(
                .invalidUTF8, closeCode: .invalidPayload, offset: offset,
                message: "a close reason that is not valid UTF-8")
        }
        return .close(code, reason: String(decoding: reason, as: UTF8.self))
    }
}
