// libFuzzer harness: the BSON decoder on arbitrary bytes.
// Built and run by Scripts/fuzz.sh (not a SwiftPM target).
import IngestCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // The validating decoder: any input either decodes or throws BSONError.
    if let document = try? BSONDocument(bson: bytes) {
        // What decoded must encode, re-decode to the same value and print.
        let encoded = document.bsonBytes()
        guard let again = try? BSONDocument(bson: encoded) else {
            fatalError("a decoded document does not decode after re-encoding")
        }
        // NaN payloads make == false for equal bytes; compare the encodings.
        guard again.bsonBytes() == encoded else { fatalError("BSON round trip changed the document") }
        _ = document.extendedJSON(.canonical)
        _ = document.extendedJSON(.relaxed)
    }
    // The streaming element reader, as the server's hot paths use it.
    try? BSONDocument.forEachElement(in: bytes) { element in
        _ = try element.value()
    }
    // A shallow depth limit exercises the depth check.
    _ = try? BSONDocument(bson: bytes, options: BSONDecodingOptions(maxDepth: 3))
    return 0
}
