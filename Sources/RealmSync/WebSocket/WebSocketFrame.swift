/// One WebSocket frame as the parser delivers it: the header bits and the
/// payload, already unmasked.
///
/// ```swift
/// var parser = WebSocketFrameParser()
/// parser.append(bytes)
/// while let frame = try parser.nextFrame() { print(frame.opcode, frame.isFinal, frame.payload.count) }
/// ```
public struct WebSocketFrame: Sendable, Hashable {
    /// FIN: the last frame of its message.
    public var isFinal: Bool
    /// The frame's opcode.
    public var opcode: WebSocketOpcode
    /// The payload, unmasked.
    public var payload: [UInt8]

    /// A frame with the given fields.
    public init(isFinal: Bool = true, opcode: WebSocketOpcode, payload: [UInt8]) {
        self.isFinal = isFinal
        self.opcode = opcode
        self.payload = payload
    }
}
