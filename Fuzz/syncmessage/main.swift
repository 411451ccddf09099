// libFuzzer harness: the Realm sync message grammar (RealmSync/Messages):
// header lines, bodies, upload and download changeset lists (inflated with
// zlib when compressed), json_error bodies. Built and run by Scripts/fuzz.sh
// (not a SwiftPM target).
//
// First byte: even = a client message (as the server reads it), odd = a
// server message. Every message that parses must encode to bytes that parse
// to the same message.
import RealmSync

let limits = SyncMessageLimits(
    maxHeaderBytes: 256, maxBindDataBytes: 256, maxTokenBytes: 256, maxQueryBytes: 4096,
    maxBodyBytes: 1 << 20, maxTextBytes: 4096, maxChangesets: 10_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 == 0 {
        guard let message = try? ClientMessage(parsing: input, limits: limits) else { return 0 }
        guard (try? ClientMessage(parsing: message.encoded(), limits: limits)) == message else {
            fatalError("a client message does not round-trip: \(message.type)")
        }
        switch message {
        case .upload(let upload):
            if let changesets = try? upload.changesets(limits: limits) {
                let total = changesets.reduce(0) { $0 + $1.data.count }
                if total > upload.uncompressedSize { fatalError("changesets larger than the body") }
                let again = UploadMessage(
                    session: upload.session, changesets: changesets,
                    progressClientVersion: upload.progressClientVersion,
                    progressServerVersion: upload.progressServerVersion,
                    lockedServerVersion: upload.lockedServerVersion)
                guard (try? again.changesets(limits: limits)) == changesets else { fatalError("an upload body does not round-trip") }
            }
        case .jsonError(let error):
            if let body = try? error.body() {
                guard (try? JSONErrorBody(parsing: body.jsonText)) == body else { fatalError("a json_error body does not round-trip") }
            }
        case .bind(let bind):
            _ = bind.json
        default:
            break
        }
    } else {
        guard let message = try? ServerMessage(parsing: input, limits: limits) else { return 0 }
        guard (try? ServerMessage(parsing: message.encoded(), limits: limits)) == message else {
            fatalError("a server message does not round-trip: \(message.type)")
        }
        switch message {
        case .download(let download):
            _ = try? download.changesets(limits: limits)
        case .jsonError(let error):
            if let body = try? error.body() {
                guard (try? JSONErrorBody(parsing: body.jsonText)) == body else { fatalError("a json_error body does not round-trip") }
            }
        default:
            break
        }
    }
    return 0
}
