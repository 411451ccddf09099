// libFuzzer harness: the BSON decoder on arbitrary bytes, and the server's
// schema check (ObjectSchema.QuickCheck) against the full validation.
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
    // The server's schema check on the bytes: what it proves valid must
    // decode and pass the full validation, for every scalar type of a
    // property named as the corpus names its fields.
    for (object, check) in QuickChecks.all where check.isCertainlyValid(bson: bytes) {
        guard let document = try? BSONDocument(bson: bytes) else { fatalError("the quick check proved bytes that do not decode") }
        guard object.validate(document, in: QuickChecks.schema).isEmpty else {
            fatalError("the quick check proved a document the full validation rejects (\(object.className))")
        }
    }
    return 0
}

/// One class per scalar type, each with properties `x`, `a` and `d` of that
/// type (the BSON corpus's field names; optional in every other class) and
/// the `_id` primary key, as a synced schema has it.
enum QuickChecks {
    static let types: [PropertyType] = [
        .bool, .int, .float, .double, .string, .data, .date, .decimal128, .objectId, .uuid, .mixed,
    ]
    static let objects: [ObjectSchema] = types.enumerated().map { index, type in
        ObjectSchema(
            className: "C\(index)", kind: .asymmetric,
            properties: [Property(name: "_id", type: .objectId, isPrimaryKey: true)]
                + ["x", "a", "d"].map { Property(name: $0, type: type, isOptional: index % 2 == 0) })
    }
    static let schema: Schema = {
        guard let schema = try? Schema(objects), (try? schema.checkStructure(synced: true)) != nil else {
            fatalError("the fuzz schema is invalid")
        }
        return schema
    }()
    static let all: [(ObjectSchema, ObjectSchema.QuickCheck)] = objects.map { ($0, ObjectSchema.QuickCheck($0)) }
}
