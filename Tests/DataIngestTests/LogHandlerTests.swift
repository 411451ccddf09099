#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Logging
import Testing
import IngestTestSupport
@testable import DataIngest

/// A handler that keeps what it is given, to check what a multiplexed
/// `Logger` hands to the second handler.
struct KeepingLogHandler: LogHandler {
    let kept: KeptEvents
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { kept.append(event.message.description) }
}

/// The messages a ``KeepingLogHandler`` was given.
final class KeptEvents: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var messages: [String] = []
    func append(_ message: String) { lock.lock(); messages.append(message); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return messages }
}

/// An error with a text of its own.
struct PaymentError: Error, CustomStringConvertible {
    var code: Int
    var description: String { "card declined (\(code))" }
}

/// IngestLogHandler behind swift-log's `Logger`, on a collecting sink: value
/// semantics, metadata precedence, structured values, the error, the call
/// site, the writer's policies. (`LogEvent` below is swift-log's: this file
/// imports both modules, and the SDK's class is `IngestLogEvent`.)
@Suite struct LogHandlerTests {
    func makeWriter(
        _ sink: CollectingSink, _ directory: TemporaryDirectory,
        configuration: LogWriter.Configuration = .init()
    ) throws -> LogWriter {
        try LogWriter(realmConfiguration: sink.configuration(in: directory.path), configuration: configuration)
    }

    /// swift-log's own value-semantics test (LogHandler's documentation),
    /// with the handler made by the factory that `LoggingSystem.bootstrap` takes.
    @Test func logLevelAndMetadataAreValues() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try makeWriter(sink, directory)
        defer { writer.shutdown() }
        var logger1 = Logger(label: "first logger", factory: IngestLogHandler.factory(writer))
        logger1.logLevel = .debug
        logger1[metadataKey: "only-on"] = "first"

        var logger2 = logger1
        logger2.logLevel = .error  // must not affect logger1
        logger2[metadataKey: "only-on"] = "second"  // must not affect logger1

        #expect(logger1.logLevel == .debug)
        #expect(logger2.logLevel == .error)
        #expect(logger1[metadataKey: "only-on"] == "first")
        #expect(logger2[metadataKey: "only-on"] == "second")

        // The same for the handler itself, and for its metadata provider.
        var handler1 = IngestLogHandler(label: "h", writer: writer)
        handler1.metadataProvider = .init { ["p": "1"] }
        var handler2 = handler1
        handler2.metadataProvider = nil
        handler2.metadata = ["m": "2"]
        #expect(handler1.metadataProvider?.get() == ["p": "1"])
        #expect(handler2.metadataProvider == nil)
        #expect(handler1.metadata.isEmpty && handler2.metadata == ["m": "2"])
        #expect(handler1.label == "h" && handler1.logLevel == .info)

        // And what each logger records.
        logger1.debug("one")
        logger2.debug("dropped: below .error")
        logger2.error("two")
        #expect(writer.flush(timeout: 20))
        #expect(sink.committed.map { $0["message"] } == [.string("one"), .string("two")])
        #expect(sink.committed.map { $0["metadata"] } == [.document(["only-on": "first"]), .document(["only-on": "second"])])
    }

    /// Handler metadata, then the provider's, then the call's; later wins,
    /// as swift-log's handlers merge them. Empty parts count as none.
    @Test func metadataPrecedenceIsHandlerThenProviderThenCall() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try makeWriter(sink, directory)
        let provider = Logger.MetadataProvider { ["k": "provider", "p": "1"] }
        var logger = Logger(label: "merge") { label in
            IngestLogHandler(label: label, writer: writer, metadataProvider: provider)
        }
        logger[metadataKey: "k"] = "handler"
        logger[metadataKey: "h"] = "2"
        logger.info("all three", metadata: ["k": "call", "c": "3"])
        logger.info("handler and provider")
        logger.handler.metadataProvider = nil
        logger.info("handler and call", metadata: ["k": "call"])
        logger.info("handler only")
        logger.handler.metadata = [:]
        logger.info("call only", metadata: ["c": "3"])
        logger.info("nothing")
        logger.info("empty call", metadata: [:])
        logger.handler.metadataProvider = .init { ["p": "1"] }
        logger.info("provider only")
        logger.handler.metadataProvider = .init { [:] }
        logger.info("empty provider")
        writer.shutdown()
        #expect(
            sink.committed.map { $0["metadata"] } == [
                .document(["c": "3", "h": "2", "k": "call", "p": "1"]),
                .document(["h": "2", "k": "provider", "p": "1"]),
                .document(["h": "2", "k": "call"]),
                .document(["h": "2", "k": "handler"]),
                .document(["c": "3"]),
                .null,
                .null,
                .document(["p": "1"]),
                .null,
            ])
    }

    /// Strings, string-convertibles (booleans and numbers as such, others as
    /// text), nested dictionaries and arrays: structured, not flattened.
    @Test func metadataValuesAreStoredAsStructuredData() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try makeWriter(sink, directory)
        let logger = Logger(label: "values", factory: IngestLogHandler.factory(writer))
        logger.notice(
            "typed",
            metadata: [
                "s": "text",
                "i": .stringConvertible(42),
                "negative": .stringConvertible(Int8(-3)),
                "big": .stringConvertible(UInt64.max),
                "b": .stringConvertible(true),
                "d": .stringConvertible(2.5),
                "f": .stringConvertible(Float(0.5)),
                "url": .stringConvertible(URL(string: "http://127.0.0.1/x")!),
                "nested": ["list": ["1", .stringConvertible(2), ["k": "v"]], "http.status": .stringConvertible(200)],
                "$op": "check",
            ])
        writer.shutdown()
        try #require(sink.committed.count == 1)
        #expect(
            sink.committed[0]["metadata"]
                == .document([
                    "_op": "check",
                    "b": .bool(true),
                    "big": "18446744073709551615",
                    "d": .double(2.5),
                    "f": .double(0.5),
                    "i": .int64(42),
                    "negative": .int64(-3),
                    "nested": .document([
                        "http_status": .int64(200),
                        "list": .array([.string("1"), .int64(2), .document(["k": "v"])]),
                    ]),
                    "s": "text",
                    "url": "http://127.0.0.1/x",
                ]))
    }

    /// Every field of an event from a swift-log call: level, label, message,
    /// source, file, function, line, and the error's type and text.
    @Test func eventsCarryTheCallSiteAndTheError() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.host = "handler-host"
        configuration.appVersion = "4.5.6"
        let writer = try makeWriter(sink, directory, configuration: configuration)
        var logger = Logger(label: "com.example.payments", factory: IngestLogHandler.factory(writer))
        logger.logLevel = .trace
        logger.error("payment failed", error: PaymentError(code: 51), metadata: ["order": "A-17"]); let line = #line
        logger.trace("from a library", source: "PaymentsKit")
        logger.log(level: .critical, "no error")
        writer.shutdown()
        let events = sink.committed
        try #require(events.count == 3)
        let event = events[0]
        #expect(event["level"] == .string("error"))
        #expect(event["label"] == .string("com.example.payments"))
        #expect(event["message"] == .string("payment failed"))
        #expect(event["metadata"] == .document(["order": "A-17"]))
        #expect(
            event["error"]
                == .document([
                    "type": .string("DataIngestTests.PaymentError"), "message": .string("card declined (51)"),
                ]))
        #expect(event["source"] == .string("DataIngestTests"))
        #expect(event["file"] == .string("DataIngestTests/LogHandlerTests.swift"))
        #expect(event["function"] == .string("eventsCarryTheCallSiteAndTheError()"))
        #expect(event["line"] == .int64(Int64(line)))
        #expect(event["host"] == .string("handler-host"))
        #expect(event["appVersion"] == .string("4.5.6"))
        #expect(event["pid"] == .int64(Int64(getpid())))
        guard case .datetime(let millis)? = event["timestamp"] else {
            Issue.record("no timestamp")
            return
        }
        #expect(abs(Double(millis) / 1000 - Date().timeIntervalSince1970) < 60)
        #expect(events[1]["level"] == .string("trace"))
        #expect(events[1]["source"] == .string("PaymentsKit"))
        #expect(events[1]["error"] == nil)  // absent without an error
        #expect(events[2]["level"] == .string("critical"))
        #expect(events[2]["metadata"] == .null)
        #expect(events[2]["error"] == nil)
    }

    /// Multiplexed with another handler (the console, say): both get every
    /// event, and the level is set on both.
    @Test func multiplexedBothHandlersGetEveryEvent() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try makeWriter(sink, directory)
        let kept = KeptEvents()
        var logger = Logger(label: "both", factory: IngestLogHandler.factory(writer, alsoTo: { _ in KeepingLogHandler(kept: kept) }))
        logger.info("to both")
        logger.debug("to neither")
        logger.logLevel = .debug
        logger.debug("now to both")
        writer.shutdown()
        #expect(logger.handler is MultiplexLogHandler)
        #expect(kept.all == ["to both", "now to both"])
        #expect(sink.committed.map { $0["message"] } == [.string("to both"), .string("now to both")])
        // The console form of the bootstrap line builds.
        let console = Logger(label: "console", factory: IngestLogHandler.factory(writer, alsoTo: StreamLogHandler.standardError))
        #expect(console.handler is MultiplexLogHandler)
    }

    /// The writer's drop policy and counters apply to swift-log calls as to
    /// IngestLogger's: a full queue drops and counts, flush and shutdown
    /// commit everything accepted, calls after shutdown are counted.
    @Test func theWritersPoliciesApply() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.queueCapacity = 10
        let writer = try makeWriter(sink, directory, configuration: configuration)
        let logger = Logger(label: "policies", factory: IngestLogHandler.factory(writer))
        sink.hold()
        logger.info("first")  // taken by the writer, which waits at the held sink
        #expect(eventually(timeout: 10) { sink.waitingCommits == 1 })
        for i in 0..<25 { logger.info("queued \(i)") }
        #expect(writer.currentStatistics.droppedQueueFull == 15)
        #expect(writer.currentStatistics.queuedEvents == 10)
        sink.release()
        #expect(writer.flush(timeout: 20))
        #expect(writer.currentStatistics.committedEvents == 11)
        writer.shutdown()
        logger.info("after shutdown")
        let statistics = writer.currentStatistics
        #expect(statistics.droppedAfterShutdown == 1)
        #expect(statistics.droppedEvents == 16)
        #expect(sink.committed.map { $0["message"] } == [.string("first")] + (0..<10).map { .string("queued \($0)") })
    }
}
