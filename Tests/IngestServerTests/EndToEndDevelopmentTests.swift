#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestTestSupport

/// The development server (no config): a stable app id, anonymous login,
/// collections and fields learned from uploads and kept across restarts.
@Suite("End to end: development server", .serialized)
struct EndToEndDevelopmentTests {
    @Test("learns collections and fields additively, keeps them across a restart, still rejects type changes")
    func developmentModeLearnsSchema() throws {
        let directory = try TemporaryDirectory("e2e")
        var server: IngestTestServer? = try IngestTestServer(config: nil, directory: directory)
        let dataPath = directory.path + "/data"
        let appId = try String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(appId.hasPrefix("dev-"))
        let sink = dataPath + "/\(appId).sqlite"
        var token = try #require(server).login(app: appId).access
        let store = SegmentStoreID.random()

        // A collection the server has never seen, described by the client's header schema.
        let clientSchema = try Schema([
            ObjectSchema(
                className: "LogLine", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "level", type: .string),
                    Property(name: "at", type: .date),
                    Property(name: "tags", type: .string, collection: .list),
                ])
        ])
        let first = try makeSegment(
            store: store, number: 1, schema: clientSchema,
            [
                [
                    (
                        "LogLine",
                        [
                            "_id": .objectId(.generate()), "level": .string("info"), "at": .datetime(1000),
                            "tags": .array([.string("a")]),
                        ]
                    ),
                    // No header schema for this one: types inferred from the values.
                    ("Metric", ["_id": .string("m-1"), "value": .double(2.5), "count": .int64(3)]),
                ]
            ])
        let response = try #require(server).upload(app: appId, token: token, body: first)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.int("accepted") == 2)
        #expect(try sqliteRows(sink, "SELECT level, at, tags FROM LogLine") == [["info", "1000", #"["a"]"#]])
        #expect(try sqliteRows(sink, "SELECT _id, typeof(value), count FROM Metric") == [["m-1", "real", "3"]])

        // A new field on a known collection adds a nullable column.
        let second = try makeSegment(
            store: store, number: 2,
            [
                [
                    ("LogLine", ["_id": .objectId(.generate()), "level": .string("warn"), "at": .datetime(2000), "host": .string("h1")])
                ]
            ])
        #expect(try #require(server).upload(app: appId, token: token, body: second).int("accepted") == 1)
        #expect(try sqliteRows(sink, "SELECT level, host FROM LogLine ORDER BY at") == [["info", "nil"], ["warn", "h1"]])

        // Restart: same app id, learned schema kept, so a type change is rejected.
        server?.stop()
        server = nil
        server = try IngestTestServer(config: nil, directory: directory)
        token = try #require(server).login(app: appId).access
        let third = try makeSegment(
            store: store, number: 3,
            [
                [
                    ("LogLine", ["_id": .objectId(.generate()), "level": .int32(3), "at": .datetime(3000)])
                ]
            ])
        let rejected = try #require(server).upload(app: appId, token: token, body: third)
        #expect(rejected.status == 200, "\(rejected.text)")
        #expect(rejected.int("rejected") == 1)
        let reasons = rejected.json?["rejected_objects"] as? [[String: Any]]
        #expect(reasons?.first?["error_code"] as? String == "wrongType")
        #expect(try sqliteRows(sink, "SELECT count(*) FROM LogLine") == [["2"]])
        // Names SQL cannot hold apart (letter case) or the sink reserves are not
        // learned: those objects are rejected, the rest of the upload goes through.
        let clashes = try makeSegment(
            store: store, number: 4,
            [
                [("LogLine", ["_id": .objectId(.generate()), "level": .string("x"), "at": .datetime(4), "Level": .string("y")])],
                [("LogLine", ["_id": .objectId(.generate()), "level": .string("x"), "at": .datetime(5), "_ingested_at": .int32(1)])],
                [("logline", ["_id": .objectId(.generate())])],
                [("LogLine", ["_id": .objectId(.generate()), "level": .string("ok"), "at": .datetime(6)])],
            ])
        let clashed = try #require(server).upload(app: appId, token: token, body: clashes)
        #expect(clashed.status == 200, "\(clashed.text)")
        #expect(clashed.int("accepted") == 1)
        #expect(clashed.int("rejected") == 3)
        #expect(try sqliteRows(sink, "SELECT count(*) FROM LogLine") == [["3"]])
        // The replay of segment 1 after the restart still answers from its receipt.
        let replay = try #require(server).upload(app: appId, token: token, body: first)
        #expect(replay.body == response.body)
        server?.stop()
    }
}
