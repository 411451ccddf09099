#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// A recorded object for the recorder tests.
final class LoggerTestInvoice: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: String
    @Persisted var store: String
    @Persisted var total: Decimal128
}

/// IngestLogger and LogWriter on a collecting sink: levels, metadata,
/// queue policies, flush, shutdown, the recorder.
@Suite struct LoggerTests {
    @Test func eventsCarryEveryField() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.appVersion = "1.2.3"
        configuration.host = "test-host"
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path), configuration: configuration)
        var logger = IngestLogger(
            label: "com.example.test", writer: writer,
            metadataProvider: .init { ["request.id": "r-17"] })
        logger[metadataKey: "region"] = "eu-1"
        logger.warning("disk at \(91)%", metadata: ["$op": "check", "nested": ["a": ["1", "2"]]]); let line = #line
        writer.shutdown()
        let events = sink.committed
        try #require(events.count == 1)
        let event = events[0]
        #expect(event["level"] == .string("warning"))
        #expect(event["label"] == .string("com.example.test"))
        #expect(event["message"] == .string("disk at 91%"))
        #expect(event["source"] == .string("DataIngestTests"))
        #expect(event["file"] == .string("DataIngestTests/LoggerTests.swift"))
        #expect(event["function"] == .string("eventsCarryEveryField()"))
        #expect(event["line"] == .int64(Int64(line)))
        #expect(event["host"] == .string("test-host"))
        #expect(event["pid"] == .int64(Int64(getpid())))
        #expect(event["appVersion"] == .string("1.2.3"))
        guard case .document(let metadata)? = event["metadata"] else {
            Issue.record("metadata is not a document: \(String(describing: event["metadata"]))")
            return
        }
        // Keys that documents do not allow ('.', a leading '$') are made valid.
        #expect(metadata["region"] == .string("eu-1"))
        #expect(metadata["request_id"] == .string("r-17"))
        #expect(metadata["_op"] == .string("check"))
        #expect(metadata["nested"] == .document(["a": .array([.string("1"), .string("2")])]))
        guard case .datetime(let millis)? = event["timestamp"] else {
            Issue.record("no timestamp")
            return
        }
        #expect(abs(Double(millis) / 1000 - Date().timeIntervalSince1970) < 60)
    }

    @Test func disabledLevelsEvaluateNothing() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        var logger = IngestLogger(label: "quiet", writer: writer)
        logger.logLevel = .error
        let evaluated = LockedBox(0)
        func expensive() -> IngestLogger.Message {
            evaluated.withLock { $0 += 1 }
            return "expensive"
        }
        logger.trace(expensive())
        logger.debug(expensive())
        logger.info(expensive(), metadata: ["k": "v"])
        logger.notice(expensive())
        logger.warning(expensive())
        logger.log(level: .info, expensive())
        #expect(evaluated.withLock { $0 } == 0)
        logger.error(expensive())
        logger.critical(expensive())
        writer.shutdown()
        #expect(evaluated.withLock { $0 } == 2)
        #expect(sink.committed.map { $0["level"] } == [.string("error"), .string("critical")])
        #expect(writer.currentStatistics.acceptedEvents == 2)
    }

    @Test func manyThreadsLogConcurrentlyAndShutdownDeliversEverything() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.queueCapacity = 256
        configuration.whenFull = .wait(milliseconds: 20_000)  // nothing may be dropped here
        configuration.maxEventsPerTransaction = 100
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path), configuration: configuration)
        let threads = 8
        let perThread = 1_500
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let logger = IngestLogger(label: "thread-\(thread)", writer: writer)
            for seq in 0..<perThread {
                logger.info("event \(seq)", metadata: ["seq": "\(seq)"])
            }
        }
        writer.shutdown()
        let statistics = writer.currentStatistics
        #expect(statistics.acceptedEvents == threads * perThread)
        #expect(statistics.committedEvents == threads * perThread)
        #expect(statistics.droppedEvents == 0)
        #expect(statistics.queuedEvents == 0)
        let events = sink.committed
        #expect(events.count == threads * perThread)
        var seen = Set<String>()
        var ids = Set<ObjectId>()
        for event in events {
            guard case .string(let label)? = event["label"], case .document(let metadata)? = event["metadata"],
                case .string(let seq)? = metadata["seq"], case .objectId(let id)? = event["_id"]
            else { continue }
            seen.insert("\(label)/\(seq)")
            ids.insert(id)
        }
        #expect(seen.count == threads * perThread)
        #expect(ids.count == threads * perThread)
        // Grouped: far fewer transactions than events, none over the limit.
        #expect(sink.transactionCount >= (threads * perThread) / 100)
        #expect(sink.transactionCount < threads * perThread)
        // Shutdown is idempotent, also from several threads at once.
        DispatchQueue.concurrentPerform(iterations: 4) { _ in writer.shutdown() }
        // After shutdown nothing more is accepted, and it is counted.
        IngestLogger(label: "late", writer: writer).error("too late")
        #expect(writer.currentStatistics.droppedAfterShutdown == 1)
        #expect(sink.committed.count == threads * perThread)
    }

    @Test func aFullQueueDropsNewEventsAndCountsThem() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.queueCapacity = 10
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path), configuration: configuration)
        let logger = IngestLogger(label: "full", writer: writer)
        sink.hold()
        logger.info("first")  // taken by the writer, which waits in commit
        #expect(eventually(timeout: 10) { sink.waitingCommits == 1 })
        let start = monotonicNow()
        for n in 0..<25 { logger.info("queued \(n)") }
        #expect(monotonicNow() - start < 1, "a log call must not wait with .dropNewest")
        var statistics = writer.currentStatistics
        #expect(statistics.queuedEvents == 10)
        #expect(statistics.droppedQueueFull == 15)
        #expect(statistics.droppedEvents == 15)
        sink.release()
        #expect(writer.flush(timeout: 20))
        statistics = writer.currentStatistics
        #expect(statistics.committedEvents == 11)
        #expect(sink.committed.count == 11)
        // There is room again.
        logger.info("after")
        writer.shutdown()
        #expect(sink.committed.count == 12)
        #expect(writer.currentStatistics.droppedEvents == 15)
    }

    @Test func theWaitPolicyBoundsTheCallersWait() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.queueCapacity = 2
        configuration.whenFull = .wait(milliseconds: 100)
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path), configuration: configuration)
        let logger = IngestLogger(label: "wait", writer: writer)
        sink.hold()
        logger.info("first")
        #expect(eventually(timeout: 10) { sink.waitingCommits == 1 })
        logger.info("a")
        logger.info("b")
        let start = monotonicNow()
        logger.info("c")  // waits ~100 ms, then is dropped
        let waited = monotonicNow() - start
        #expect(waited >= 0.09)
        #expect(waited < 5)
        #expect(writer.currentStatistics.droppedQueueFull == 1)
        sink.release()
        writer.shutdown()
        #expect(sink.committed.count == 3)
    }

    @Test func failedCommitsAreCountedNotHidden() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        let logger = IngestLogger(label: "fail", writer: writer)
        sink.fail(true)
        for n in 0..<5 { logger.info("lost \(n)") }
        #expect(writer.flush(timeout: 20))
        let statistics = writer.currentStatistics
        #expect(statistics.droppedCommitFailed == 5)
        #expect(statistics.droppedEvents == 5)
        #expect(statistics.lastError?.contains("storage full") == true)
        sink.fail(false)
        logger.info("kept")
        writer.shutdown()
        #expect(sink.committed.count == 1)
    }

    @Test func theRecorderCommitsBeforeReturningAndThrowsInsteadOfDropping() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        let recorder = writer.recorder
        let invoice = LoggerTestInvoice()
        invoice._id = "S01-T01-000001"
        invoice.store = "S01"
        invoice.total = try Decimal128(parsing: "12.50")
        try recorder.record(invoice)
        // Committed when record returned.
        #expect(sink.committed.count == 1)
        #expect(sink.committed.first?["total"] == .decimal128(try Decimal128(parsing: "12.50")))
        try recorder.record(
            LoggerTestInvoice.self, value: ["_id": "S01-T01-000002", "store": "S01", "total": try Decimal128(parsing: "3.10")])
        #expect(sink.committed.count == 2)
        // A failing commit throws; nothing is silently dropped.
        sink.fail(true)
        let failed = LoggerTestInvoice()
        failed._id = "S01-T01-000003"
        failed.store = "S01"
        #expect(throws: LoggingError.self) { try recorder.record(failed) }
        sink.fail(false)
        // A schema error throws too (wrong value type).
        #expect(throws: LoggingError.self) {
            try recorder.record(LoggerTestInvoice.self, value: ["_id": "x", "store": 42])
        }
        // Many objects in one transaction.
        let batch = (4...6).map { n -> LoggerTestInvoice in
            let invoice = LoggerTestInvoice()
            invoice._id = "S01-T01-00000\(n)"
            invoice.store = "S01"
            return invoice
        }
        try recorder.record(contentsOf: batch)
        #expect(sink.committed.count == 5)
        #expect(writer.currentStatistics.recordedObjects == 5)
        writer.shutdown()
        #expect(throws: LoggingError.self) { try recorder.record(invoice) }
    }
}
