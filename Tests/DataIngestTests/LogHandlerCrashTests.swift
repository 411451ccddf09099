#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestTestSupport

/// `LoggingSystem.bootstrap` with IngestLogHandler in a real server app
/// (`log-handler-child`), which logs through three libraries' `Logger`s,
/// calls `flush()` and is killed with `kill -9` at once, uploads possibly
/// under way. A second run of the app uploads the rest. Every flushed event
/// is in the server's SQLite once, with its level, label, metadata (the
/// handler's, the bootstrap provider's and the call's) and error.
@Suite(.serialized) struct LogHandlerCrashTests {
    @Test func everyFlushedEventIsStoredOnceAfterKillNine() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        func child(_ arguments: [String]) throws -> (Process, Pipe) {
            try startSyncClientChild(arguments, in: directory.path, server: server, appId: appId, executable: "log-handler-child")
        }
        let rounds = 2_000
        let (logging, loggingOut) = try child(["log", "\(rounds)"])
        defer { reap(logging, within: 0) }
        let flushed = try readLine(loggingOut.fileHandleForReading.fileDescriptor, timeout: 120)
        reap(logging, within: 0)
        #expect(logging.terminationReason == .uncaughtSignal && logging.terminationStatus == SIGKILL)
        #expect(flushed == "flushed \(3 * rounds) 0")

        let (drain, drainOut) = try child(["drain"])
        defer { reap(drain, within: 0) }
        #expect(try readLine(drainOut.fileHandleForReading.fileDescriptor, timeout: 90) == "uploaded")
        _ = eventually(timeout: 20) { !drain.isRunning }
        reap(drain, within: 0)
        #expect(drain.terminationStatus == 0)

        // Each event once: one row per (label, seq), 3 per round.
        #expect(try server.query(appId, "SELECT count(*) FROM LogEvent") == [Int64(3 * rounds)])
        #expect(
            try server.query(appId, "SELECT count(DISTINCT label || '/' || json_extract(metadata, '$.seq')) FROM LogEvent")
                == [Int64(3 * rounds)])
        // Level per library; the debug calls (below .info) were not recorded.
        #expect(
            try server.queryText(
                appId, "SELECT label || ' ' || level || ' ' || count(*) FROM LogEvent GROUP BY label, level ORDER BY label")
                == ["com.example.db warning \(rounds)", "com.example.http info \(rounds)", "com.example.payments error \(rounds)"])
        // The bootstrap's provider: every event has its request's id.
        #expect(
            try server.query(
                appId,
                "SELECT count(*) FROM LogEvent WHERE json_extract(metadata, '$.request_id') = 'req-' || json_extract(metadata, '$.seq')")
                == [Int64(3 * rounds)])
        // Handler metadata, structured call metadata: numbers as numbers, nested documents and arrays.
        #expect(
            try server.query(
                appId,
                "SELECT count(*) FROM LogEvent WHERE label = 'com.example.db' AND json_extract(metadata, '$.db') = 'orders' AND json_type(metadata, '$.ms') = 'integer'"
            )
                == [Int64(rounds)])
        #expect(
            try server.query(
                appId,
                "SELECT count(*) FROM LogEvent WHERE label = 'com.example.http' AND json_extract(metadata, '$.status') = 200 AND message = 'GET /items/' || json_extract(metadata, '$.seq') || ' 200'"
            )
                == [Int64(rounds)])
        #expect(
            try server.query(
                appId,
                "SELECT count(*) FROM LogEvent WHERE json_extract(metadata, '$.order.id') = 'A-' || json_extract(metadata, '$.seq') AND json_extract(metadata, '$.order.items[1]') = '2'"
            )
                == [Int64(rounds)])
        // The error's type and text; no error elsewhere.
        #expect(
            try server.query(
                appId,
                "SELECT count(*) FROM LogEvent WHERE json_extract(error, '$.type') = 'log_handler_child.PaymentError' AND json_extract(error, '$.message') = 'card declined (' || json_extract(metadata, '$.seq') || ')'"
            )
                == [Int64(rounds)])
        #expect(try server.query(appId, "SELECT count(*) FROM LogEvent WHERE json_extract(error, '$.type') IS NULL") == [Int64(2 * rounds)])
        // The call site.
        #expect(
            try server.queryText(
                appId, "SELECT DISTINCT source || ' ' || file || ' ' || function FROM LogEvent WHERE label = 'com.example.payments'")
                == ["log_handler_child log_handler_child/main.swift charge(_:)"])
    }
}
