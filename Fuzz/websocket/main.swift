// libFuzzer harness: the WebSocket frame parser and message reader
// (RealmSync/WebSocket), fed whole or in pieces. Built and run by
// Scripts/fuzz.sh (not a SwiftPM target).
//
// First byte: bits 0-5 the piece size (1...63, 0 = all at once); bit 6 a
// small message limit (300 bytes) so the limit checks are reached by short
// inputs; bit 7 parses server frames (no masking) instead of client frames.
import RealmSync

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let pieceSize = Int(data[0] & 0x3F)
    let limit = data[0] & 0x40 != 0 ? 300 : 1 << 20
    let masked = data[0] & 0x80 == 0
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))

    var reader = WebSocketMessageReader(configuration: .init(maxMessageBytes: limit, requireMasking: masked))
    var fed = 0
    var rounds = 0
    reading: while true {
        rounds += 1
        if rounds > 1_000_000 { fatalError("the reader does not advance") }
        do {
            while let event = try reader.next() {
                switch event {
                case .text(let text):
                    if text.utf8.count > limit { fatalError("a text message above the limit was accepted") }
                case .binary(let bytes):
                    if bytes.count > limit { fatalError("a binary message above the limit was accepted") }
                case .ping(let bytes), .pong(let bytes):
                    if bytes.count > 125 { fatalError("a control frame above 125 bytes was accepted") }
                case .close(let code, let reason):
                    if let code, !code.isAllowedOnWire { fatalError("close code \(code) was accepted") }
                    if reason.utf8.count > 123 { fatalError("a close reason above 123 bytes was accepted") }
                }
            }
        } catch {
            if error.offset < 0 || error.offset > input.count { fatalError("error offset \(error.offset) outside the input") }
            break reading
        }
        guard fed < input.count else { break }
        let end = pieceSize == 0 ? input.count : min(input.count, fed + pieceSize)
        reader.append(Array(input[fed..<end]))
        fed = end
    }
    if reader.bufferedByteCount > input.count { fatalError("the reader holds more than it was given") }

    // Frame level: every frame the parser accepts encodes back to a frame
    // that parses to the same fields.
    var parser = WebSocketFrameParser(configuration: .init(maxPayloadBytes: limit, requireMasking: masked))
    parser.append(input)
    var frames = 0
    while frames < 10_000, let frame = try? parser.nextFrame() {
        frames += 1
        let again = WebSocketFrameEncoder.frame(
            frame.opcode, payload: frame.payload, isFinal: frame.isFinal,
            maskingKey: masked ? (1, 2, 3, 4) : nil)
        var check = WebSocketFrameParser(configuration: .init(maxPayloadBytes: limit, requireMasking: masked))
        check.append(again)
        guard let same = try? check.nextFrame(), same == frame, check.bufferedByteCount == 0 else {
            fatalError("a frame does not round-trip")
        }
    }
    return 0
}
