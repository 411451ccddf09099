import Foundation
import IngestCore
@testable import IngestServer
import IngestTestSupport
import Testing

@testable import RealmSync

/// The replays on the PostgreSQL sink (Scripts/test.sh starts PostgreSQL
/// and sets INGEST_TEST_POSTGRES_URL): the same documents, once each.
@Suite(
    "Realm sync replays on the PostgreSQL sink", .serialized,
    .enabled(
        if: TestEnvironment.runs(ifAvailable: ProcessInfo.processInfo.environment["INGEST_TEST_POSTGRES_URL"] != nil),
        "INGEST_TEST_POSTGRES_URL is not set: run Scripts/test.sh, which starts PostgreSQL"))
struct RealmPostgresTests {
    /// A fresh database on the test server, dropped on release.
    final class Database {
        let base: String
        let name = "realm_\(UInt32.random(in: 0...UInt32.max))"
        let url: String

        init() throws {
            base = try #require(ProcessInfo.processInfo.environment["INGEST_TEST_POSTGRES_URL"])
            let admin = try PostgresConnection(base)
            _ = try admin.execute("CREATE DATABASE \(name)")
            admin.close()
            url = PostgresTestURL.replacingDatabase(in: base, with: name)
        }

        deinit {
            guard let admin = try? PostgresConnection(base) else { return }
            _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            admin.close()
        }

        func rows(_ sql: String) throws -> [[String]] {
            let connection = try PostgresConnection(url)
            defer { connection.close() }
            return try connection.queryText(sql).map { $0.map { $0 ?? "nil" } }
        }
    }

    static func expectHoldsExactly(_ scenario: String, _ database: Database) throws {
        let rows = try database.rows(#"SELECT "deviceId", "seq"::text, "note" FROM "SensorReading" ORDER BY "seq"::bigint"#)
        let expected = try RealmEndpointTests.expected(scenario).map { document -> [String] in
            let note: String
            if case .string(let text)? = document["note"] { note = text } else { note = "nil" }
            if case .string(let device)? = document["deviceId"] { return [device, String(document["seq"]?.int64Value ?? -1), note] }
            return []
        }
        #expect(rows == expected)
    }

    @Test(
        "each scenario on PostgreSQL, and a restart between upload and acknowledgement, store each object once",
        arguments: ["basic", "batch", "reconnect"])
    func replay(scenario: String) throws {
        let database = try Database()
        let server = try RealmTestServer(postgres: database.url)
        defer { server.stop() }
        let file = RealmEndpointTests.ClientFile()
        let transcripts = Recordings.transcriptFiles(scenario)
        let token = try server.accessToken()
        for (index, transcript) in transcripts.enumerated() {
            let drop = scenario == "reconnect" && index == 0
            try RealmEndpointTests.replay(transcript, port: { server.port }, file: file, token: token, dropAfterUpload: drop)
            if drop {
                server.server.kill9()
                try server.server.restart()
            }
        }
        try Self.expectHoldsExactly(scenario, database)
    }
}

extension RealmPostgresTests {
    @Test("two servers sharing state: a client that reconnects to the other server keeps its file and stores each object once")
    func twoServersShareClientFiles() throws {
        let database = try Database()
        let first = try RealmTestServer(postgres: database.url, sharedState: true)
        defer { first.stop() }
        let second = try RealmTestServer(postgres: database.url, sharedState: true)
        defer { second.stop() }
        let file = RealmEndpointTests.ClientFile()
        let transcripts = Recordings.transcriptFiles("reconnect")
        let token = try first.accessToken()
        try RealmEndpointTests.replay(transcripts[0], port: { first.port }, file: file, token: token, dropAfterUpload: true)
        // The token and the client file the first server issued are honoured by the second.
        try RealmEndpointTests.replay(transcripts[1], port: { second.port }, file: file, token: token)
        try Self.expectHoldsExactly("reconnect", database)
    }
}

enum PostgresTestURL {
    /// `postgresql://user@host:port/db?query` with `db` replaced.
    static func replacingDatabase(in uri: String, with database: String) -> String {
        guard let scheme = uri.range(of: "://") else { return uri }
        let rest = uri[scheme.upperBound...]
        let query = rest.firstIndex(of: "?")
        let authority = rest[..<(rest.firstIndex(of: "/") ?? query ?? rest.endIndex)]
        let suffix = query.map { String(rest[$0...]) } ?? ""
        return String(uri[..<scheme.upperBound]) + authority + "/" + database + suffix
    }
}
