/// The opcode of a WebSocket frame (RFC 6455, section 5.2).
///
/// ```swift
/// let frame = try parser.nextFrame()
/// if frame?.opcode.isControl == true { /* ping, pong or close */ }
/// ```
public enum WebSocketOpcode: UInt8, Sendable, Hashable, CaseIterable {
    /// A continuation of a fragmented text or binary message.
    case continuation = 0x0
    /// The first (or only) frame of a UTF-8 text message.
    case text = 0x1
    /// The first (or only) frame of a binary message.
    case binary = 0x2
    /// The closing handshake: an optional status code and reason.
    case close = 0x8
    /// A ping; the peer answers with a pong carrying the same payload.
    case ping = 0x9
    /// A pong: the answer to a ping, or an unsolicited heartbeat.
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes of payload, never fragmented.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}
