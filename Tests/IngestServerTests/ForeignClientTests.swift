import Foundation
import IngestCore
import Testing
import IngestTestSupport
@testable import IngestServer

/// Issue 18, items 5 and 6: a client written in Python from the docs alone
/// (`Docs/examples/segment_client.py`, BSON built by hand) declares float,
/// list, embedded and optional embedded properties in the segment header;
/// the development server learns them as declared, applies `float`'s range
/// (`outOfRange`), and refuses a schema document it cannot read with
/// `400 malformed_schema`, writing nothing. The script writes segment
/// format version 1 (CRC-32) and, in its `version-2` mode, version 2
/// (CRC-32C): the server reads both.
@Suite("A client in another language", .serialized)
struct ForeignClientTests {
    var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/examples/segment_client.py").path
    }

    func run(_ server: IngestTestServer, app: String, _ mode: String) throws -> (status: Int, body: [String: Any])? {
        guard let result = try runTool("python3", [script, "http://127.0.0.1:\(server.port)", app, mode]) else { return nil }
        #expect(result.status == 0, "\(result.output)")
        let line = result.output.split(separator: "\n").last.map(String.init) ?? ""
        let json = try #require((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any], "\(result.output)")
        return ((json["status"] as? NSNumber)?.intValue ?? 0, json["body"] as? [String: Any] ?? [:])
    }

    @Test func aSchemaWrittenByHandIsLearnedAsDeclared() throws {
        let directory = try TemporaryDirectory("e2e")
        let server = try IngestTestServer(config: nil, directory: directory)
        defer { server.stop() }
        let dataPath = directory.path + "/data"
        let appId = try server.developmentAppId()
        guard let declared = try run(server, app: appId, "declared") else {
            _ = try TestEnvironment.require(String?.none, "python3")
            return
        }
        #expect(declared.status == 200, "\(declared.body)")
        #expect((declared.body["accepted"] as? NSNumber)?.intValue == 1, "\(declared.body)")

        let learned = try Schema(json: try Data(contentsOf: URL(fileURLWithPath: dataPath + "/\(appId).schema.json")))
        let station = try #require(learned["Station"])
        #expect(station.kind == .asymmetric)
        #expect(station.primaryKey == "_id")
        let temperature = try #require(station[property: "temperature"])
        #expect(temperature.type == .float)
        #expect(!temperature.isOptional)
        #expect(station[property: "tags"]?.type == .string && station[property: "tags"]?.collection == .list)
        let readings = try #require(station[property: "readings"])
        #expect(readings.type == .object && readings.collection == .list && readings.objectClassName == "Reading")
        let location = try #require(station[property: "location"])
        #expect(location.type == .object && location.isOptional && location.objectClassName == "Location")
        #expect(learned["Reading"]?.kind == .embedded)
        #expect(learned["Reading"]?.properties.map(\.name) == ["value", "note"])
        #expect(learned["Reading"]?[property: "note"]?.isOptional == true)
        #expect(learned["Location"]?.properties.map { "\($0.name):\($0.type.rawValue)" } == ["lat:double", "lon:double"])
        let sink = dataPath + "/\(appId).sqlite"
        #expect(
            try sqliteRows(
                sink, "SELECT temperature, tags, json_extract(readings, '$[1].note'), json_extract(location, '$.lon') FROM Station")
                == [["21.25", #"["roof","north"]"#, "gust", "8.25"]])

        // Learned as float: a double beyond Float's range is refused per object.
        let tooLarge = try #require(try run(server, app: appId, "out-of-range"))
        #expect(tooLarge.status == 200)
        let rejected = tooLarge.body["rejected_objects"] as? [[String: Any]]
        #expect(rejected?.first?["error_code"] as? String == "outOfRange", "\(tooLarge.body)")

        // A schema document of another shape is refused as a whole, nothing written.
        let unreadable = try #require(try run(server, app: appId, "unreadable-schema"))
        #expect(unreadable.status == 400)
        #expect(unreadable.body["error_code"] as? String == "malformed_schema", "\(unreadable.body)")
        #expect(try sqliteRows(sink, "SELECT count(*) FROM Station") == [["1"]])
        #expect(try sqliteRows(sink, "SELECT count(*) FROM _dataingest_receipts") == [["2"]])
        #expect(try server.call("GET", "/healthz").status == 200)

        // Docs/Protocol.md: an empty sealed segment is acknowledged with zeros
        // (and a receipt); bytes after the last gzip member are malformed_gzip.
        let empty = try #require(try run(server, app: appId, "empty"))
        #expect(empty.status == 200)
        #expect((empty.body["objects"] as? NSNumber)?.intValue == 0 && (empty.body["transactions"] as? NSNumber)?.intValue == 0)
        #expect((empty.body["store_id"] as? String).map { $0 == $0.uppercased() } == true, "\(empty.body)")
        let trailing = try #require(try run(server, app: appId, "trailing-bytes"))
        #expect(trailing.status == 400)
        #expect(trailing.body["error_code"] as? String == "malformed_gzip", "\(trailing.body)")
        #expect(try sqliteRows(sink, "SELECT count(*) FROM _dataingest_receipts") == [["3"]])

        // Segment format version 2 (CRC-32C frames, computed by the script
        // from Docs/SegmentFormat.md): accepted like version 1 above.
        let versionTwo = try #require(try run(server, app: appId, "version-2"))
        #expect(versionTwo.status == 200, "\(versionTwo.body)")
        #expect((versionTwo.body["accepted"] as? NSNumber)?.intValue == 1, "\(versionTwo.body)")
        #expect(try sqliteRows(sink, "SELECT count(*) FROM Station") == [["2"]])
    }

    /// The example of Docs/SegmentFormat.md ("The schema document"), read
    /// from the doc itself, is what the server reads.
    @Test func theDocumentedSchemaExampleReadsAsDeclared() throws {
        let doc = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Docs/SegmentFormat.md").path, encoding: .utf8)
        let start = try #require(doc.range(of: "`float` `value`, 184 bytes"))
        var bytes: [UInt8] = []
        for line in doc[start.upperBound...].split(separator: "\n").dropFirst(2).prefix(12) {
            let hex = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().prefix(16)
            bytes += hex.compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        }
        #expect(bytes.count == 184)
        let schema = try #require(try ParsedSegment.clientSchema(bytes))
        #expect(schema["Reading"]?.kind == .asymmetric && schema["Reading"]?.primaryKey == "_id")
        #expect(schema["Reading"]?[property: "value"]?.type == .float)
        #expect(try ParsedSegment.clientSchema(SegmentFormat.emptyDocument) == nil)
        var wrong = bytes
        wrong[0xae] = UInt8(ascii: "x")  // "float" becomes "fxoat"
        #expect((#expect(throws: UploadError.self) { try ParsedSegment.clientSchema(wrong) })?.code == "malformed_schema")
    }
}
