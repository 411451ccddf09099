#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
@testable import DataIngest
import IngestTestSupport

/// What the caller hands to the writer thread and what the writer makes of
/// it: metadata merged on the writer thread exactly as documented (logger,
/// then provider, then call; later wins), the caller's clock reading, and
/// the order and completeness of accepted events when the queue fills up.
@Suite struct LoggerHandOffTests {
    @Test func metadataPartsAreMergedOnTheWriterLaterWins() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        var logger = IngestLogger(
            label: "merge", writer: writer,
            metadataProvider: .init { ["k": "provider", "p": "1"] })
        logger[metadataKey: "k"] = "logger"
        logger[metadataKey: "l"] = "2"
        logger.info("all three", metadata: ["k": "call", "c": "3"])
        logger.info("logger and provider")
        logger.metadataProvider = nil
        logger.info("logger and call", metadata: ["k": "call"])
        logger.info("logger only")
        logger.metadata = [:]
        logger.info("call only", metadata: ["c": "3"])
        logger.info("nothing")
        logger.info("empty call", metadata: [:])
        logger.metadataProvider = .init { ["p": "1"] }
        logger.info("provider only")
        writer.shutdown()
        let documents = sink.committed.map { $0["metadata"] }
        #expect(
            documents == [
                .document(["c": "3", "k": "call", "l": "2", "p": "1"]),
                .document(["k": "provider", "l": "2", "p": "1"]),
                .document(["k": "call", "l": "2"]),
                .document(["k": "logger", "l": "2"]),
                .document(["c": "3"]),
                .null,
                .null,
                .document(["p": "1"]),
            ])
    }

    /// A counter whose text changes after the call: the message keeps the
    /// text it had at the call.
    final class Counter: CustomStringConvertible, @unchecked Sendable {  // only used on one thread
        var value = 0
        var description: String { "counter=\(value)" }
    }

    struct Plain { var a = 1; var b = "x" }

    @Test func messagesHaveTheTextOfStringInterpolation() throws {
        let counter = Counter()
        let word: Substring = "héllo wörld".split(separator: " ")[1]
        let optional: Int? = 5
        let pairs: [(IngestLogger.Message, String)] = [
            ("plain", "plain"),
            ("", ""),
            (
                "\(Int.min) \(Int.max) \(UInt64.max) \(Int8(-5)) \(UInt8(255)) \(Int32(-7)) \(UInt16(9))",
                "\(Int.min) \(Int.max) \(UInt64.max) \(Int8(-5)) \(UInt8(255)) \(Int32(-7)) \(UInt16(9))"
            ),
            (
                "\(1.5) \(Float(0.1)) \(true) \(optional as Any) \(word) \(Plain()) \(counter)",
                "\(1.5) \(Float(0.1)) \(true) \(optional as Any) \(word) \(Plain()) \(counter)"
            ),
            ("ünïcödé \("🙂") and \(42)%", "ünïcödé 🙂 and 42%"),
            ("\(1)\(2)\(3)", "123"),
            // More parts than the message keeps inline.
            ("a\(1)b\(2)c\(3)d\(4)e\("5")f\(UInt(6))g\(7.5)h", "a1b2c3d4e5f6g7.5h"),
        ]
        for (message, text) in pairs {
            #expect(message.description == text)
            #expect(message == IngestLogger.Message(text))
            #expect(message.hashValue == IngestLogger.Message(text).hashValue)
        }
        var changed: IngestLogger.Message = "a \(1)"
        changed.description = "b"
        #expect(changed.description == "b")

        // Into the store: the text at the call, made on the writer thread.
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        let logger = IngestLogger(label: "text", writer: writer)
        sink.hold()
        counter.value = 1
        logger.info("\(counter) at \(7)")
        counter.value = 2
        sink.release()
        writer.shutdown()
        #expect(sink.committed.map { $0["message"] } == [.string("counter=1 at 7")])
    }

    /// A dictionary literal is kept as written and made into metadata on the
    /// writer (a later entry wins); a `Metadata` value passes as before.
    @Test func callMetadataLiteralsAndValuesBothWork() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        let logger = IngestLogger(label: "call", writer: writer)
        let key = "k"
        logger.info("literal", metadata: ["k": "1", key: "2", "a.b": ["x", "y"]])
        let value: IngestLogger.Metadata = ["v": .dictionary(["w": "1"])]
        logger.notice("value", metadata: value)
        let optional: IngestLogger.Metadata? = nil
        logger.error("nil value", metadata: optional)
        logger.log(level: .critical, "log(level:)", metadata: ["l": .describing(3)])
        logger.warning("nil literal", metadata: nil)
        let literal: IngestLogger.CallMetadata = ["c": "1", key == "k" ? "c" : "d": "2"]
        #expect(literal.metadata == ["c": "2"])
        #expect(!literal.isEmpty && IngestLogger.CallMetadata([:]).isEmpty)
        writer.shutdown()
        #expect(
            sink.committed.map { $0["metadata"] } == [
                .document(["a_b": .array([.string("x"), .string("y")]), "k": "2"]),
                .document(["v": .document(["w": "1"])]),
                .null,
                .document(["l": "3"]),
                .null,
            ])
    }

    @Test func theTimestampIsTheCallersClockInWholeMilliseconds() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        let logger = IngestLogger(label: "clock", writer: writer)
        sink.hold()  // the writer commits long after the calls
        let before = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        logger.info("one")
        logger.info("two")
        let after = Int64((Date().timeIntervalSince1970 * 1000).rounded(.up))
        usleep(50_000)
        sink.release()
        writer.shutdown()
        let stamps = sink.committed.compactMap { event -> Int64? in
            if case .datetime(let millis)? = event["timestamp"] { return millis }
            return nil
        }
        #expect(stamps.count == 2)
        for stamp in stamps {
            #expect(stamp >= before && stamp <= after)
        }
        #expect(stamps == stamps.sorted())
    }

    /// With `.dropNewest` and the writer stuck in a commit, each thread's
    /// accepted events are a prefix of what it logged (everything before the
    /// queue filled up), and after `flush()` all of them are in the store, in
    /// the order each thread logged them.
    @Test func acceptedEventsBeforeAFullQueueAreAllStoredInOrderPerThread() throws {
        let directory = try TemporaryDirectory("sync")
        let sink = CollectingSink()
        var configuration = LogWriter.Configuration()
        configuration.queueCapacity = 300
        configuration.maxEventsPerTransaction = 64
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path), configuration: configuration)
        sink.hold()
        IngestLogger(label: "first", writer: writer).info("first")  // the writer waits in its commit
        #expect(eventually(timeout: 10) { sink.waitingCommits == 1 })
        let threads = 4
        let perThread = 200
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let logger = IngestLogger(label: "thread-\(thread)", writer: writer)
            for seq in 0..<perThread {
                logger.info("event \(seq)", metadata: ["seq": .stringConvertible("\(seq)")])
            }
        }
        var statistics = writer.currentStatistics
        #expect(statistics.queuedEvents == 300)
        #expect(statistics.droppedQueueFull == threads * perThread - 300)
        sink.release()
        #expect(writer.flush(timeout: 20))
        statistics = writer.currentStatistics
        #expect(statistics.committedEvents == 301)
        #expect(statistics.acceptedEvents == 301)
        var sequences: [String: [Int]] = [:]
        for event in sink.committed.dropFirst() {
            guard case .string(let label)? = event["label"], case .document(let metadata)? = event["metadata"],
                case .string(let seq)? = metadata["seq"], let number = Int(seq)
            else {
                Issue.record("unexpected event \(event)")
                continue
            }
            sequences[label, default: []].append(number)
        }
        #expect(sequences.values.reduce(0) { $0 + $1.count } == 300)
        for (label, numbers) in sequences {
            // Everything the thread logged before its first drop, in order.
            #expect(numbers == Array(0..<numbers.count), "\(label): \(numbers.prefix(20))")
        }
        writer.shutdown()
    }
}
