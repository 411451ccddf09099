#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestTestSupport

/// `ClickHouseClient` on IngestCore's shared HTTP/1.1 client: against the
/// real ClickHouse that Scripts/test.sh starts on 127.0.0.1, and against a
/// closed port.
@Suite("ClickHouse client", .serialized)
struct ClickHouseClientTests {
    @Test(
        "statements, a large chunked answer, external data and a server exception share keep-alive connections",
        .enabled(if: TestEnvironment.runs(ifAvailable: ClickHouseTestService.isAvailable), ClickHouseTestService.skipReason))
    func keepAliveAnswersAndExceptions() throws {
        let database = try ClickHouseTestDatabase()
        let client = database.client
        try client.execute("CREATE DATABASE \(database.name)")
        try client.execute("CREATE TABLE \(database.name).t (id Int64, name String) ENGINE = MergeTree ORDER BY id")
        try client.execute("INSERT INTO \(database.name).t FORMAT TabSeparated", body: Array("1\tone\n2\ttwo\n3\tthree\n".utf8))
        #expect(try client.query("SELECT count() FROM \(database.name).t") == "3\n")

        // About 1.2 MB: several chunks, read whole.
        let numbers = try client.query("SELECT number FROM system.numbers LIMIT 200000").split(separator: "\n")
        #expect(numbers.count == 200_000)
        #expect(numbers.last == "199999")

        let ids = ClickHouseClient.ExternalTable(name: "ids", structure: "key Int64", rows: Array("1\n3\n".utf8))
        let found = try client.execute("SELECT name FROM \(database.name).t WHERE id IN ids ORDER BY id", external: ids)
        #expect(String(decoding: found, as: UTF8.self) == "one\nthree\n")

        do {
            try client.execute("SELECT * FROM \(database.name).missing")
            Issue.record("expected ClickHouse to refuse a missing table")
        } catch {
            #expect(error.code == .server)
            #expect(error.serverCode == 60)
            #expect(error.httpStatus != nil && error.httpStatus != 200)
            #expect(error.message.contains("\(database.name).missing"))
            #expect(!error.isTransient)
        }
        // The connection that carried the exception answer is still usable.
        #expect(try client.query("SELECT 1") == "1\n")
    }

    @Test(
        "a statement slower than timeoutSeconds fails as a transient connection error; the next call connects anew",
        .enabled(if: TestEnvironment.runs(ifAvailable: ClickHouseTestService.isAvailable), ClickHouseTestService.skipReason))
    func timeouts() throws {
        guard let url = ClickHouseTestService.url else { throw TestSupportError("\(ClickHouseTestService.skipReason)") }
        let client = try ClickHouseClient(url: url)
        defer { client.closeIdle() }
        client.timeoutSeconds = 0.5
        let started = Date()
        do {
            try client.execute("SELECT sleep(2)")
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .connection)
            #expect(error.isTransient)
            #expect(error.message.contains("timed out"))
            #expect(error.message.contains("ClickHouse at http://"))
        }
        #expect(Date().timeIntervalSince(started) < 1.9)
        client.timeoutSeconds = 60
        #expect(try client.query("SELECT 1") == "1\n")
    }

    @Test("a closed port fails at once with connectionRefused's errno, the server named and what to check")
    func refusedPort() throws {
        let port = try freeLoopbackPort()
        let client = try ClickHouseClient(url: "http://127.0.0.1:\(port)")
        client.timeoutSeconds = 5
        do {
            try client.execute("SELECT 1")
            Issue.record("expected connection refused")
        } catch {
            #expect(error.code == .connection)
            #expect(error.errno == ECONNREFUSED)
            #expect(error.isTransient)
            #expect(error.message.contains("cannot connect to ClickHouse at http://127.0.0.1:\(port)"))
            #expect(error.message.contains("check that"))
        }
    }
}
