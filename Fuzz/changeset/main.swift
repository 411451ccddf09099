// libFuzzer harness: the Realm changeset decoder (RealmSync/Changeset) and
// the objects a changeset builds (RealmSync/Ingest). Built and run by
// Scripts/fuzz.sh (not a SwiftPM target).
//
// First byte: bit 0 selects the schema mode (0: fixed, the recorded
// SensorReading schema; 1: development, starting empty). Every changeset
// that decodes must encode to bytes that decode to the same bytes again,
// and every document it builds must be BSON that round-trips.
import IngestCore
import RealmSync

let recordedSchema: Schema = {
    do {
        return try Schema([
            ObjectSchema(
                className: "Location", kind: .embedded,
                properties: [
                    Property(name: "lat", type: .double), Property(name: "lon", type: .double),
                    Property(name: "label", type: .string, isOptional: true),
                ]),
            ObjectSchema(
                className: "SensorReading", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "deviceId", type: .string), Property(name: "seq", type: .int), Property(name: "ok", type: .bool),
                    Property(name: "temperature", type: .float), Property(name: "pressure", type: .double),
                    Property(name: "price", type: .decimal128), Property(name: "takenAt", type: .date),
                    Property(name: "runId", type: .uuid), Property(name: "raw", type: .data),
                    Property(name: "note", type: .string, isOptional: true), Property(name: "count", type: .int, isOptional: true),
                    Property(name: "tags", type: .string, collection: .list), Property(name: "samples", type: .int, collection: .list),
                    Property(name: "labels", type: .string, collection: .list),
                    Property(name: "attrs", type: .string, isOptional: true, collection: .map),
                    Property(name: "extra", type: .mixed, isOptional: true),
                    Property(name: "location", type: .object, isOptional: true, objectClassName: "Location"),
                    Property(name: "route", type: .object, collection: .list, objectClassName: "Location"),
                ]),
            ObjectSchema(className: "Station", kind: .topLevel, properties: [Property(name: "_id", type: .string, isPrimaryKey: true)]),
        ])
    } catch {
        fatalError("the harness schema is invalid: \(error)")
    }
}()

let empty: Schema = {
    do { return try Schema([]) } catch { fatalError("an empty schema is invalid: \(error)") }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let development = data[0] & 1 == 1
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let limits = ChangesetDecoder.Limits(maxPathLength: 16, maxInternedStrings: 10_000, maxValueBytes: 1 << 16)

    if let instructions = try? ChangesetDecoder.decodeAll(input, limits: limits) {
        let bytes = ChangesetEncoder.encode(instructions)
        guard let again = try? ChangesetDecoder.decodeAll(bytes, limits: limits), ChangesetEncoder.encode(again) == bytes else {
            fatalError("a decoded changeset does not re-encode")
        }
    }

    var ingestor = ChangesetIngestor(
        schema: development ? empty : recordedSchema,
        schemaMode: development ? .development : .fixed,
        limits: .init(maxValues: 100_000, decoder: limits))
    guard let result = try? ingestor.ingest(input) else { return 0 }
    for object in result.objects {
        let bson = object.document.bsonBytes()
        guard let back = try? BSONDocument(bson: bson), back.bsonBytes() == bson else {
            fatalError("a built document is not BSON that round-trips")
        }
        _ = ingestor.schema.validate(object.document, against: object.className)
    }
    return 0
}
