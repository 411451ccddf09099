// libFuzzer harness: the Extended JSON parser on arbitrary text.
// Built and run by Scripts/fuzz.sh (not a SwiftPM target).
import IngestCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let document = try? BSONDocument(extendedJSON: text) else { return 0 }
    // Whatever parses must encode to BSON that the decoder accepts, and the
    // canonical form must parse again.
    let encoded = document.bsonBytes()
    guard (try? BSONDocument(bson: encoded)) != nil else {
        fatalError("a document parsed from Extended JSON encodes to invalid BSON")
    }
    let canonical = document.extendedJSON(.canonical)
    guard let reparsed = try? BSONDocument(extendedJSON: canonical) else {
        fatalError("canonical Extended JSON output does not parse: \(canonical)")
    }
    guard reparsed.bsonBytes() == encoded else {
        fatalError("canonical Extended JSON does not round-trip: \(canonical)")
    }
    _ = document.extendedJSON(.relaxed)
    return 0
}
