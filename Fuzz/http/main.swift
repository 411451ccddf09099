// libFuzzer harness: the HTTP/1.1 request parser (internal, hence
// @testable). Built and run by Scripts/fuzz.sh (not a SwiftPM target).
//
// The first byte sets the size of the pieces the rest is fed in (1...64
// bytes, 0 = all at once), so partial reads at every boundary are covered.
@testable import IngestHTTP

// Small limits so the limit checks are reached by short inputs.
let limits = HTTPRequestParser.Limits(maxHeaderBytes: 512, maxHeaderCount: 16, maxBodyBytes: 4096)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let pieceSize = Int(data[0] % 65)
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    var parser = HTTPRequestParser(limits: limits)
    var fed = 0
    var events = 0
    parsing: while true {
        events += 1
        if events > 100_000 { fatalError("the parser does not advance") }
        switch parser.next() {
        case .needMoreData:
            guard fed < input.count else { break parsing }
            let end = pieceSize == 0 ? input.count : min(input.count, fed + pieceSize)
            parser.append(UnsafeRawBufferPointer(rebasing: input[fed..<end]))
            fed = end
        case .expectContinue:
            continue
        case .request(let request, _):
            guard request.body.count <= limits.maxBodyBytes else { fatalError("a body above maxBodyBytes was accepted") }
            _ = request.queryParameters
            _ = request.headers["content-type"]
        case .error:
            break parsing
        }
    }
    _ = parser.phase
    return 0
}
