#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

/// IngestLogger into a real ingest-server: events from many threads land in
/// the server's SQLite exactly once, with their fields and metadata.
@Suite(.serialized) struct LoggerEndToEndTests {
    @Test func eventsFromManyThreadsReachTheServerExactlyOnce() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        let user = try await app.login(credentials: .anonymous)
        var configuration = LogWriter.Configuration()
        configuration.whenFull = .wait(milliseconds: 20_000)
        configuration.appVersion = "9.9.9"
        let writer = try LogWriter(user: user, configuration: configuration)
        let threads = 6
        let perThread = 1_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var logger = IngestLogger(label: "worker", writer: writer)
            logger[metadataKey: "thread"] = "\(thread)"
            for seq in 0..<perThread {
                logger.notice("request \(seq) served", metadata: ["seq": "\(seq)", "http.status": "200"])
            }
        }
        writer.shutdown()
        #expect(writer.currentStatistics.committedEvents == threads * perThread)
        try await user.session.wait(for: .upload, timeout: 60)
        let total = threads * perThread
        #expect(try server.query(appId, "SELECT count(*) FROM LogEvent") == [Int64(total)])
        #expect(
            try server.query(
                appId,
                """
                SELECT count(DISTINCT json_extract(metadata, '$.thread') || '/' || json_extract(metadata, '$.seq')) FROM LogEvent
                """) == [Int64(total)])
        #expect(
            try server.queryText(
                appId,
                "SELECT DISTINCT level || ' ' || label || ' ' || appVersion || ' ' || json_extract(metadata, '$.http_status') FROM LogEvent"
            )
                == ["notice worker 9.9.9 200"])
        #expect(try server.query(appId, "SELECT DISTINCT pid FROM LogEvent") == [Int64(getpid())])
    }
}
