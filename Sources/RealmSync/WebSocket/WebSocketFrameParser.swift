/// An incremental RFC 6455 frame parser for the server side of a connection:
/// feed it the bytes read from the socket in any pieces, then take the
/// complete frames out.
///
/// It checks every rule that a single frame must follow: reserved bits
/// clear (no extension is negotiated), a known opcode, masking from clients
/// (``Configuration/requireMasking``), control frames final and at most 125
/// bytes, the most significant bit of a 64-bit length clear, and a payload
/// no longer than ``dataPayloadLimit`` (checked from the header, before any
/// payload is buffered). Message-level rules (continuations, UTF-8,
/// close payloads, message size) are ``WebSocketMessageReader``'s.
///
/// Memory: the parser keeps the bytes appended and not yet returned as
/// frames: at most one incomplete frame (at most `dataPayloadLimit` plus a
/// 14-byte header) beyond what the caller appended at once. After an error
/// every call throws the same error.
///
/// ```swift
/// var parser = WebSocketFrameParser(configuration: .init(maxPayloadBytes: 1 << 20))
/// parser.append(readBytes)
/// while let frame = try parser.nextFrame() { handle(frame) }
/// ```
public struct WebSocketFrameParser: Sendable {
    /// Limits and rules.
    public struct Configuration: Sendable, Hashable {
        /// The largest payload one frame may carry. Default 16 MiB plus 4 KiB
        /// (Realm's limit for one upload message, and room for its header line).
        public var maxPayloadBytes: Int
        /// Whether frames must be masked, as every frame from a client must
        /// (RFC 6455, 5.1). Default true; false parses a server's frames.
        public var requireMasking: Bool

        /// Creates a configuration; every argument has a documented default.
        public init(maxPayloadBytes: Int = (16 << 20) + 4096, requireMasking: Bool = true) {
            self.maxPayloadBytes = maxPayloadBytes
            self.requireMasking = requireMasking
        }
    }

    /// The limits and rules in force.
    public let configuration: Configuration
    private var storage: [UInt8] = []
    private var start = 0
    /// Bytes consumed by returned frames before `storage[start]`.
    private var consumed = 0
    private var failure: WebSocketError?

    /// The largest payload the next text, binary or continuation frame may
    /// carry; starts at ``Configuration/maxPayloadBytes``. A message reader
    /// lowers it to what is left of its message budget.
    public var dataPayloadLimit: Int

    /// A parser with the given configuration.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        dataPayloadLimit = configuration.maxPayloadBytes
    }

    /// Bytes appended but not yet returned in a frame.
    public var bufferedByteCount: Int { storage.count - start }

    /// The offset in the stream of the next byte to parse.
    public var streamOffset: Int { consumed }

    /// Appends bytes read from the connection.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        storage.append(contentsOf: bytes)
    }

    /// Appends bytes read from the connection.
    public mutating func append(_ bytes: [UInt8]) {
        compact()
        storage.append(contentsOf: bytes)
    }

    /// Drops the bytes already parsed once they are at least half the buffer.
    private mutating func compact() {
        if start > 0 && start >= storage.count / 2 {
            storage.removeSubrange(0..<start)
            start = 0
        }
    }

    /// The next complete frame, or nil when more bytes are needed.
    /// - Throws: ``WebSocketError`` with code `protocolViolation` or
    ///   `messageTooBig`; the connection must then be closed.
    public mutating func nextFrame() throws(WebSocketError) -> WebSocketFrame? {
        if let failure { throw failure }
        do {
            return try parseFrame()
        } catch {
            failure = error
            throw error
        }
    }

    private func fail(_ code: WebSocketError.Code, _ close: WebSocketCloseCode, at position: Int, _ message: String) -> WebSocketError {
        WebSocketError(code, closeCode: close, offset: consumed + position - start, message: message)
    }

    private mutating func parseFrame() throws(WebSocketError) -> WebSocketFrame? {
        let available = storage.count - start
        guard available >= 2 else { return nil }
        let first = storage[start]
        let second = storage[start + 1]
        if first & 0x70 != 0 {
            throw fail(.protocolViolation, .protocolError, at: start, "reserved bits set in a frame header; no extension was negotiated")
        }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw fail(.protocolViolation, .protocolError, at: start, "reserved opcode \(first & 0x0F)")
        }
        let isFinal = first & 0x80 != 0
        let masked = second & 0x80 != 0
        if configuration.requireMasking && !masked {
            throw fail(.protocolViolation, .protocolError, at: start + 1, "a client frame is not masked; clients must mask every frame")
        }
        if !configuration.requireMasking && masked {
            throw fail(.protocolViolation, .protocolError, at: start + 1, "a server frame is masked; servers must not mask")
        }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            headerLength = 4
            guard available >= headerLength else { return nil }
            length = UInt64(storage[start + 2]) << 8 | UInt64(storage[start + 3])
        } else if length == 127 {
            headerLength = 10
            guard available >= headerLength else { return nil }
            length = 0
            for index in 0..<8 { length = length << 8 | UInt64(storage[start + 2 + index]) }
            if length >> 63 != 0 {
                throw fail(.protocolViolation, .protocolError, at: start + 2, "a 64-bit frame length has its most significant bit set")
            }
        }
        if opcode.isControl {
            if !isFinal {
                throw fail(
                    .protocolViolation, .protocolError, at: start, "a fragmented \(opcode) frame; control frames cannot be fragmented")
            }
            if length > 125 {
                throw fail(
                    .protocolViolation, .protocolError, at: start + 1,
                    "a \(opcode) frame of \(length) bytes; control frames carry at most 125")
            }
        }
        let limit = max(0, min(dataPayloadLimit, configuration.maxPayloadBytes))
        if !opcode.isControl && length > UInt64(limit) {
            throw fail(
                .messageTooBig, .messageTooBig, at: start + 1,
                "a frame of \(length) bytes; at most \(limit) are accepted")
        }
        let maskOffset = headerLength
        if masked { headerLength += 4 }
        let payloadLength = Int(length)
        guard available >= headerLength + payloadLength else { return nil }
        let payloadStart = start + headerLength
        var payload = Array(storage[payloadStart..<payloadStart + payloadLength])
        if masked {
            let key = (
                storage[start + maskOffset], storage[start + maskOffset + 1],
                storage[start + maskOffset + 2], storage[start + maskOffset + 3]
            )
            WebSocketMask.apply(key: key, to: &payload)
        }
        start += headerLength + payloadLength
        consumed += headerLength + payloadLength
        if start == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 1 << 16)
            start = 0
        }
        return WebSocketFrame(isFinal: isFinal, opcode: opcode, payload: payload)
    }
}

/// XOR masking with a 4-byte key (RFC 6455, 5.3): the same operation masks
/// and unmasks.
enum WebSocketMask {
    /// Masks or unmasks `bytes` in place, starting at key position 0.
    static func apply(key: (UInt8, UInt8, UInt8, UInt8), to bytes: inout [UInt8]) {
        let keyWord = UInt64(key.0) | UInt64(key.1) << 8 | UInt64(key.2) << 16 | UInt64(key.3) << 24
        let wide = keyWord | keyWord << 32
        let keyBytes = [key.0, key.1, key.2, key.3]
        bytes.withUnsafeMutableBytes { raw in
            let count = raw.count
            guard let base = raw.baseAddress else { return }
            var index = 0
            // Eight bytes at a time; the key repeats every 4, so word order is preserved.
            while index + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                base.storeBytes(of: word ^ UInt64(littleEndian: wide), toByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < count {
                raw[index] ^= keyBytes[index & 3]
                index += 1
            }
        }
    }
}
