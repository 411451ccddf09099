/// Writes WebSocket frames. A server's frames are unmasked (the default); a
/// client's carry a masking key (for tests and load clients).
///
/// ```swift
/// var out: [UInt8] = []
/// WebSocketFrameEncoder.append(.binary, payload: Array("mark 1 1\n".utf8), to: &out)
/// let close = WebSocketFrameEncoder.closeFrame(code: .normalClosure)
/// ```
public enum WebSocketFrameEncoder {
    /// The most bytes of reason a close frame can carry (125 minus the code).
    public static let maxCloseReasonBytes = 123

    /// Appends one frame to `out`.
    ///
    /// - Parameters:
    ///   - opcode: the frame's opcode; a control frame must be final and
    ///     carry at most 125 bytes (a precondition: the payload comes from
    ///     this process, never from the peer unchecked).
    ///   - payload: the unmasked payload.
    ///   - isFinal: FIN; false for all but the last fragment of a message.
    ///   - maskingKey: 4 bytes for a client frame; nil (a server frame) by default.
    public static func append(
        _ opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, isFinal: Bool = true,
        maskingKey: (UInt8, UInt8, UInt8, UInt8)? = nil, to out: inout [UInt8]
    ) {
        precondition(
            !opcode.isControl || (isFinal && payload.count <= 125),
            "control frames are final and carry at most 125 bytes")
        out.append((isFinal ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        let count = payload.count
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(count & 0xFF))
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(count) >> UInt64(shift))) }
        }
        guard let key = maskingKey else {
            out.append(contentsOf: payload)
            return
        }
        out.append(contentsOf: [key.0, key.1, key.2, key.3])
        var masked = Array(payload)
        WebSocketMask.apply(key: key, to: &masked)
        out.append(contentsOf: masked)
    }

    /// Appends one frame to `out` (see ``append(_:payload:isFinal:maskingKey:to:)-(_,UnsafeRawBufferPointer,_,_,_)``).
    public static func append(
        _ opcode: WebSocketOpcode, payload: [UInt8], isFinal: Bool = true,
        maskingKey: (UInt8, UInt8, UInt8, UInt8)? = nil, to out: inout [UInt8]
    ) {
        payload.withUnsafeBytes { append(opcode, payload: $0, isFinal: isFinal, maskingKey: maskingKey, to: &out) }
    }

    /// One frame as bytes.
    public static func frame(
        _ opcode: WebSocketOpcode, payload: [UInt8], isFinal: Bool = true,
        maskingKey: (UInt8, UInt8, UInt8, UInt8)? = nil
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 14)
        append(opcode, payload: payload, isFinal: isFinal, maskingKey: maskingKey, to: &out)
        return out
    }

    /// A close frame with `code` and `reason`, the reason cut at a character
    /// boundary to ``maxCloseReasonBytes``. `nil` sends an empty payload.
    public static func closeFrame(
        code: WebSocketCloseCode?, reason: String = "", maskingKey: (UInt8, UInt8, UInt8, UInt8)? = nil
    ) -> [UInt8] {
        guard let code else { return frame(.close, payload: [], maskingKey: maskingKey) }
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var used = 0
        for scalar in reason.unicodeScalars {
            let size = UTF8.width(scalar)
            if used + size > maxCloseReasonBytes { break }
            payload.append(contentsOf: String(scalar).utf8)
            used += size
        }
        return frame(.close, payload: payload, maskingKey: maskingKey)
    }
}
