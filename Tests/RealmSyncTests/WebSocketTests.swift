import Foundation
import Testing

@testable import RealmSync

/// A client frame: masked with a fixed key.
func clientFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], final: Bool = true) -> [UInt8] {
    WebSocketFrameEncoder.frame(opcode, payload: payload, isFinal: final, maskingKey: (0x37, 0xFA, 0x21, 0x3D))
}

/// Feeds `bytes` to a reader in pieces of `piece` bytes, collecting events
/// until the first error.
func readAll(_ bytes: [UInt8], piece: Int = 0, configuration: WebSocketMessageReader.Configuration = .init())
    -> (events: [WebSocketMessageReader.Event], error: WebSocketError?)
{
    var reader = WebSocketMessageReader(configuration: configuration)
    var events: [WebSocketMessageReader.Event] = []
    var offset = 0
    repeat {
        let end = piece == 0 ? bytes.count : min(bytes.count, offset + piece)
        reader.append(Array(bytes[offset..<end]))
        offset = end
        do {
            while let event = try reader.next() { events.append(event) }
        } catch {
            return (events, error)
        }
    } while offset < bytes.count
    return (events, nil)
}

@Suite("WebSocket frames")
struct WebSocketFrameTests {
    @Test("the RFC 6455 examples: a masked \"Hello\" and an unmasked one")
    func rfcExamples() throws {
        let masked: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        #expect(readAll(masked).events == [.text("Hello")])
        #expect(clientFrame(.text, Array("Hello".utf8)) == masked)
        let unmasked: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]
        #expect(WebSocketFrameEncoder.frame(.text, payload: Array("Hello".utf8)) == unmasked)
        var parser = WebSocketFrameParser(configuration: .init(requireMasking: false))
        parser.append(unmasked)
        #expect(try parser.nextFrame() == WebSocketFrame(opcode: .text, payload: Array("Hello".utf8)))
    }

    @Test("16- and 64-bit lengths, fed whole and one byte at a time", arguments: [0, 125, 126, 65535, 65536, 200_000])
    func lengths(size: Int) throws {
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let bytes = clientFrame(.binary, payload)
        let headerLength = size < 126 ? 6 : size <= 65535 ? 8 : 14
        #expect(bytes.count == headerLength + size)
        #expect(readAll(bytes).events == [.binary(payload)])
        if size <= 65536 { #expect(readAll(bytes, piece: 1).events == [.binary(payload)]) }
        // The server's unmasked frame has the same length field.
        #expect(WebSocketFrameEncoder.frame(.binary, payload: payload).count == headerLength - 4 + size)
    }

    @Test("a fragmented message with pings in between, in pieces of every size", arguments: [0, 1, 2, 3, 7, 64])
    func fragmentation(piece: Int) throws {
        var bytes = clientFrame(.text, Array("Hel".utf8), final: false)
        bytes += clientFrame(.ping, [1, 2, 3])
        bytes += clientFrame(.continuation, Array("lo, ".utf8), final: false)
        bytes += clientFrame(.pong, [])
        bytes += clientFrame(.continuation, Array("wörld".utf8))
        bytes += clientFrame(.binary, [9, 8], final: false) + clientFrame(.continuation, [7])
        bytes += WebSocketFrameEncoder.closeFrame(code: .normalClosure, reason: "bye", maskingKey: (1, 2, 3, 4))
        bytes += clientFrame(.binary, [0xFF])  // after the close: ignored
        let (events, error) = readAll(bytes, piece: piece)
        #expect(error == nil)
        #expect(
            events == [.ping([1, 2, 3]), .pong([]), .text("Hello, wörld"), .binary([9, 8, 7]), .close(.normalClosure, reason: "bye")])
    }

    @Test("a UTF-8 character split across fragments is fine")
    func splitCharacter() {
        let text = Array("é€😀".utf8)
        var bytes: [UInt8] = []
        for (index, byte) in text.enumerated() {
            bytes += clientFrame(index == 0 ? .text : .continuation, [byte], final: index == text.count - 1)
        }
        #expect(readAll(bytes).events == [.text("é€😀")])
    }

    static let badFrames: [(String, [UInt8], WebSocketError.Code, WebSocketCloseCode)] = [
        ("unmasked client frame", WebSocketFrameEncoder.frame(.binary, payload: [1]), .protocolViolation, .protocolError),
        ("RSV1 set", [0xC2, 0x80, 0, 0, 0, 0], .protocolViolation, .protocolError),
        ("RSV3 set", [0x92, 0x80, 0, 0, 0, 0], .protocolViolation, .protocolError),
        ("reserved opcode 3", [0x83, 0x80, 0, 0, 0, 0], .protocolViolation, .protocolError),
        ("reserved control opcode 0xB", [0x8B, 0x80, 0, 0, 0, 0], .protocolViolation, .protocolError),
        ("fragmented ping", [0x09, 0x80, 0, 0, 0, 0], .protocolViolation, .protocolError),
        ("ping of 126 bytes", [0x89, 0xFE, 0x00, 0x7E] + [UInt8](repeating: 0, count: 130), .protocolViolation, .protocolError),
        ("64-bit length with the top bit set", [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0], .protocolViolation, .protocolError),
        ("continuation without a message", clientFrame(.continuation, [1]), .protocolViolation, .protocolError),
        (
            "a new message inside a fragmented one", clientFrame(.binary, [1], final: false) + clientFrame(.binary, [2]),
            .protocolViolation, .protocolError
        ),
        ("invalid UTF-8 text", clientFrame(.text, [0xC3, 0x28]), .invalidUTF8, .invalidPayload),
        ("an overlong encoding", clientFrame(.text, [0xC0, 0xAF]), .invalidUTF8, .invalidPayload),
        ("a surrogate", clientFrame(.text, [0xED, 0xA0, 0x80]), .invalidUTF8, .invalidPayload),
        ("above U+10FFFF", clientFrame(.text, [0xF4, 0x90, 0x80, 0x80]), .invalidUTF8, .invalidPayload),
        ("text ending inside a character", clientFrame(.text, [0xE2, 0x82]), .invalidUTF8, .invalidPayload),
        ("bad UTF-8 in the first fragment", clientFrame(.text, [0xFF], final: false), .invalidUTF8, .invalidPayload),
        ("a close payload of one byte", clientFrame(.close, [3]), .protocolViolation, .protocolError),
        ("close code 1005", clientFrame(.close, [0x03, 0xED]), .protocolViolation, .protocolError),
        ("close code 999", clientFrame(.close, [0x03, 0xE7]), .protocolViolation, .protocolError),
        ("close code 5000", clientFrame(.close, [0x13, 0x88]), .protocolViolation, .protocolError),
        ("a close reason that is not UTF-8", clientFrame(.close, [0x03, 0xE8, 0xFF]), .invalidUTF8, .invalidPayload),
    ]

    @Test("frames that break RFC 6455 are errors with the right close code", arguments: 0..<badFrames.count)
    func violations(index: Int) {
        let (name, bytes, code, closeCode) = Self.badFrames[index]
        for piece in [0, 1] {
            let (_, error) = readAll(bytes, piece: piece)
            #expect(error?.code == code, "\(name)")
            #expect(error?.closeCode == closeCode, "\(name)")
        }
    }

    @Test("the message size limit: one frame, and fragments that add up")
    func messageTooBig() {
        let configuration = WebSocketMessageReader.Configuration(maxMessageBytes: 1000)
        #expect(readAll(clientFrame(.binary, [UInt8](repeating: 1, count: 1000)), configuration: configuration).events.count == 1)
        let (_, error) = readAll(clientFrame(.binary, [UInt8](repeating: 1, count: 1001)), configuration: configuration)
        #expect(error?.code == .messageTooBig && error?.closeCode == .messageTooBig)
        let fragments =
            clientFrame(.binary, [UInt8](repeating: 1, count: 600), final: false)
            + clientFrame(.ping, [UInt8](repeating: 2, count: 125))
            + clientFrame(.continuation, [UInt8](repeating: 1, count: 401))
        let (events, fragmentError) = readAll(fragments, configuration: configuration)
        #expect(events == [.ping([UInt8](repeating: 2, count: 125))])
        #expect(fragmentError?.code == .messageTooBig)
    }

    @Test("a huge declared length fails from the header, before any payload arrives")
    func hugeLengthFailsEarly() {
        var reader = WebSocketMessageReader()
        reader.append([0x82, 0xFF, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3, 4])
        #expect(throws: WebSocketError.self) { _ = try reader.next() }
        // Every later call fails the same way.
        #expect(throws: WebSocketError.self) { _ = try reader.next() }
    }

    @Test("the error offset is where the bad frame starts")
    func errorOffset() {
        let good = clientFrame(.binary, [1, 2, 3])
        let (_, error) = readAll(good + good + [0xC2, 0x80, 0, 0, 0, 0])
        #expect(error?.offset == 2 * good.count)
    }

    @Test("close frames: the reason is cut to 123 bytes at a character boundary; no code means an empty payload")
    func closeFrames() {
        let long = String(repeating: "é", count: 100)
        let frame = WebSocketFrameEncoder.closeFrame(code: .goingAway, reason: long)
        #expect(frame.count == 2 + 2 + 122)
        #expect(frame[2...3] == [0x03, 0xE9])
        var parser = WebSocketFrameParser(configuration: .init(requireMasking: false))
        parser.append(frame)
        #expect((try? parser.nextFrame())??.opcode == .close)
        #expect(WebSocketFrameEncoder.closeFrame(code: nil) == [0x88, 0x00])
        #expect(readAll(WebSocketFrameEncoder.closeFrame(code: nil, maskingKey: (9, 9, 9, 9))).events == [.close(nil, reason: "")])
    }

    @Test("masking round-trips at every length and alignment")
    func masking() {
        for count in 0..<40 {
            let payload = (0..<count).map { UInt8($0 * 7 & 0xFF) }
            var bytes = payload
            WebSocketMask.apply(key: (0xA1, 0xB2, 0xC3, 0xD4), to: &bytes)
            let key: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4]
            #expect(bytes == payload.enumerated().map { $0.element ^ key[$0.offset % 4] })
            WebSocketMask.apply(key: (0xA1, 0xB2, 0xC3, 0xD4), to: &bytes)
            #expect(bytes == payload)
        }
    }

    @Test("UTF8Validator agrees with the standard library on every 1- to 3-byte sequence of interesting bytes")
    func validatorAgrees() {
        let interesting: [UInt8] = [
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
            0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ]
        for a in interesting {
            for b in interesting {
                for c in interesting {
                    for sequence in [[a], [a, b], [a, b, c], [a, b, c, 0x80], [a, b, c, 0xBF]] {
                        var validator = UTF8Validator()
                        let ours = validator.validate(sequence) && validator.isComplete
                        #expect(ours == (String(validating: sequence, as: UTF8.self) != nil), "\(sequence)")
                    }
                }
            }
        }
    }
}

@Suite("WebSocket handshake")
struct WebSocketHandshakeTests {
    static let headers: [(name: String, value: String)] = [
        ("Host", "127.0.0.1:9090"), ("Connection", "keep-alive, Upgrade"), ("upgrade", "WebSocket"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Protocol", "chat, com.mongodb.realm-query-sync#13"),
        ("sec-websocket-protocol", "com.mongodb.realm-query-sync#14, com.mongodb.realm-query-sync#15"),
    ]

    @Test("the RFC 6455 example key gives its accept value")
    func acceptValue() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test("an upgrade request: tokens in any case, protocols from every header")
    func upgrade() throws {
        let request = try WebSocketUpgradeRequest(method: "GET", headers: Self.headers)
        #expect(request.key == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(
            request.subprotocols == [
                "chat", "com.mongodb.realm-query-sync#13", "com.mongodb.realm-query-sync#14",
                "com.mongodb.realm-query-sync#15",
            ])
        // 15 is offered but not supported: 14 is the highest we speak.
        #expect(SyncProtocolVersion.choose(offered: request.subprotocols)?.version == 14)
        #expect(SyncProtocolVersion.choose(offered: request.subprotocols, supported: 10...13)?.version == 13)
        #expect(SyncProtocolVersion.choose(offered: ["com.mongodb.realm-query-sync#13"]) == nil)
        #expect(SyncProtocolVersion.choose(offered: ["com.mongodb.realm-sync#14", "com.mongodb.realm-query-sync#x"]) == nil)
        let headers = WebSocketHandshake.responseHeaders(for: request, subprotocol: "com.mongodb.realm-query-sync#14")
        #expect(headers.map(\.name) == ["Upgrade", "Connection", "Sec-WebSocket-Accept", "Sec-WebSocket-Protocol"])
        #expect(headers[2].value == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test("bad upgrades are refused with a reason")
    func badUpgrades() {
        func without(_ name: String) -> [(name: String, value: String)] { Self.headers.filter { $0.name.lowercased() != name } }
        func with(_ name: String, _ value: String) -> [(name: String, value: String)] { without(name.lowercased()) + [(name, value)] }
        let cases: [(String, [(name: String, value: String)], WebSocketError.Code)] = [
            ("POST", Self.headers, .badHandshake),
            ("GET", without("upgrade"), .badHandshake),
            ("GET", with("Connection", "close"), .badHandshake),
            ("GET", without("sec-websocket-key"), .badHandshake),
            ("GET", with("Sec-WebSocket-Key", "c2hvcnQ="), .badHandshake),
            ("GET", Self.headers + [("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")], .badHandshake),
            ("GET", without("sec-websocket-version"), .badHandshake),
            ("GET", with("Sec-WebSocket-Version", "8"), .unsupportedVersion),
        ]
        for (method, headers, code) in cases {
            #expect(throws: WebSocketError.self) { try WebSocketUpgradeRequest(method: method, headers: headers) }
            do {
                _ = try WebSocketUpgradeRequest(method: method, headers: headers)
            } catch {
                #expect(error.code == code)
            }
        }
    }
}
