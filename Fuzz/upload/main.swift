// libFuzzer harness: the upload handler's decode path, in process and
// without a sink: inflate within limits, read the segment completely
// (ParsedSegment, as UploadService does), decode every record and validate
// it against a schema, and against the client's header schema if it has one.
// Built and run by Scripts/fuzz.sh (not a SwiftPM target).
//
// First byte: 0 = the rest is the gzip body as uploaded; 1 = the rest is a raw
// segment stream, gzip-compressed here first (so mutations reach the frames).
@testable import IngestServer
import IngestCore
import IngestSupport

let gzipLimits = GzipLimits(maxOutputBytes: 4 << 20, maxRatio: 50, ratioCheckFloorBytes: 64 << 10)

let serverSchema: Schema = {
    do {
        return try Schema([
            ObjectSchema(
                className: "WeatherSensor", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "deviceId", type: .string),
                    Property(name: "temperatureInFahrenheit", type: .float),
                    Property(name: "windSpeedInMph", type: .int),
                    Property(name: "note", type: .string, isOptional: true),
                    Property(name: "readings", type: .double, collection: .list),
                    Property(name: "labels", type: .string, isOptional: true, collection: .map),
                    Property(name: "location", type: .object, isOptional: true, objectClassName: "Location"),
                    Property(name: "history", type: .object, collection: .list, objectClassName: "Location"),
                    Property(name: "extra", type: .mixed, isOptional: true),
                    Property(name: "serial", type: .uuid, isOptional: true),
                    Property(name: "amount", type: .decimal128, isOptional: true),
                    Property(name: "at", type: .date, isOptional: true),
                ]),
            ObjectSchema(
                className: "Location", kind: .embedded,
                properties: [
                    Property(name: "latitude", type: .double),
                    Property(name: "longitude", type: .double),
                ]),
        ])
    } catch {
        fatalError("the harness schema is invalid: \(error)")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    var body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] % 2 == 1 {
        guard let compressed = try? Gzip.compress(body, level: 1) else { fatalError("gzip compression failed") }
        body = compressed
    }
    let segment: ParsedSegment
    do {
        segment = try ParsedSegment(gzip: body, limits: gzipLimits)
    } catch {
        // Every failure must map to a client error status, never a 5xx.
        guard error.httpStatus >= 400, error.httpStatus < 500 else {
            fatalError("a malformed upload answered \(error.httpStatus)")
        }
        return 0
    }
    guard segment.transactionNumbers.count == segment.records.count else {
        fatalError("records and transaction numbers disagree")
    }
    for record in segment.records {
        guard let document = try? BSONDocument(bson: record.document) else { continue }
        if let object = serverSchema[record.collection] {
            _ = object.validate(document, in: serverSchema)
        }
        if let client = segment.clientSchema, let object = client[record.collection] {
            _ = object.validate(document, in: client)
        }
    }
    return 0
}
