#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport

/// The background writer behind ``IngestLogger`` and ``IngestRecorder``: one
/// thread that owns a synced realm and commits queued log events in groups,
/// and recorded objects one transaction each.
///
/// ```swift
/// let writer = try LogWriter(user: user)
/// let logger = IngestLogger(label: "api", writer: writer)
/// logger.info("hello")
/// try writer.recorder.record(invoice)      // returns once committed
/// writer.flush()                           // every event logged so far is committed
/// writer.shutdown()                        // commit the rest, stop the thread
/// try await user.session.wait(for: .upload, timeout: 30)
/// ```
///
/// Log events go through a bounded in-memory queue
/// (``Configuration/queueCapacity``): a log call only takes a lock and
/// appends, it never waits for I/O. When the queue is full,
/// ``Configuration/whenFull`` applies and ``Statistics/droppedEvents``
/// counts the loss. The store's disk budget (`App.Configuration.segmentStore`)
/// applies to the writer's commits: with the `.block` budget policy the
/// writer waits, the queue fills and new events are dropped; with `.fail`
/// the group's events are dropped and counted in
/// ``Statistics/droppedCommitFailed``; with `.dropOldest` the store drops old
/// segments and counts them in its own counters. Recorded objects are never
/// dropped: ``IngestRecorder/record(_:)`` throws instead.
// @unchecked Sendable: every mutable field is guarded by `monitor`.
public final class LogWriter: @unchecked Sendable {
    /// The configuration it was created with.
    public let configuration: Configuration
    /// The realm configuration the writer thread opens (its `objectTypes`
    /// are replaced per recorded type).
    public let realmConfiguration: Realm.Configuration

    /// What a thread of the writer waits for.
    private enum Wake: Int, CaseIterable {
        /// Queued events or jobs, or stopping (the writer thread).
        case work
        /// Events handled, room in the queue, or the thread finished (producers, `flush`, `shutdown`).
        case progress
    }
    private let monitor = ConditionLock<Wake>()

    // Guarded by `monitor`, which already makes every access exclusive, so
    // the run-time exclusivity check of a class's stored property (two per
    // log call, on the caller's thread) would guard nothing.
    @exclusivity(unchecked) private var queue = LogEventQueue()
    @exclusivity(unchecked) private var jobs: [RecordJob] = []
    @exclusivity(unchecked) private var writerWaiting = false
    @exclusivity(unchecked) private var stopping = false
    @exclusivity(unchecked) private var finished = false
    @exclusivity(unchecked) private var shutdownClaimed = false  // one caller joins the thread; others wait for `finished`
    @exclusivity(unchecked) private var acceptedSequence = 0  // events accepted so far
    @exclusivity(unchecked) private var handledSequence = 0  // events committed or dropped by the writer
    @exclusivity(unchecked) private var jobsSubmitted = 0
    @exclusivity(unchecked) private var jobsDone = 0
    @exclusivity(unchecked) private var statistics = Statistics()

    private let processId = Int(getpid())
    /// The swift-metrics counters; `nil` without a metrics backend.
    let metrics: LogWriterMetrics?
    private var thread: Thread?
    private let stopped = DispatchSemaphore(value: 0)

    /// A writer for `user`'s synced realm (the user's segment store, uploaded
    /// by its sync session).
    /// - Throws: ``LoggingError`` `openFailed` when the realm cannot be opened.
    public convenience init(user: User, configuration: Configuration = .init()) throws {
        var configuration = configuration
        if configuration.metricsFactory == nil { configuration.metricsFactory = user.app.configuration.metricsFactory }
        try self.init(realmConfiguration: user.flexibleSyncConfiguration(), configuration: configuration)
    }

    /// A writer for any synced realm configuration (its `objectTypes` are
    /// replaced by `[IngestLogEvent.self]`).
    /// - Throws: ``LoggingError`` `openFailed` when the realm cannot be opened.
    public init(realmConfiguration: Realm.Configuration, configuration: Configuration = .init()) throws {
        self.configuration = configuration
        self.realmConfiguration = realmConfiguration
        self.metrics = LogWriterMetrics.make(configuration.metricsFactory)
        let opened = DispatchSemaphore(value: 0)
        let openError = LockedBox<LoggingError?>(nil)
        let thread = Thread { [self] in
            var logRealm: Realm
            do {
                var logConfiguration = realmConfiguration
                logConfiguration.objectTypes = [IngestLogEvent.self]
                logRealm = try Realm(configuration: logConfiguration)
            } catch {
                openError.withLock {
                    $0 = LoggingError(.openFailed, "the log realm could not be opened: \(error)", underlyingError: error)
                }
                opened.signal()
                stopped.signal()
                return
            }
            opened.signal()
            run(logRealm)
            stopped.signal()
        }
        thread.name = "dataingest.log-writer"
        self.thread = thread
        thread.start()
        opened.wait()
        if let error = openError.withLock({ $0 }) {
            finished = true
            throw error
        }
    }

    deinit {
        shutdown()
    }

    /// Records objects through this writer's thread; see ``IngestRecorder``.
    public var recorder: IngestRecorder { IngestRecorder(writer: self) }

    /// The counters now.
    public var currentStatistics: Statistics {
        locked {
            var copy = statistics
            copy.queuedEvents = queue.count
            return copy
        }
    }

    // MARK: - Producers

    /// Queues an event; never waits for I/O (see ``Configuration/whenFull``).
    func enqueue(_ event: consuming PendingLogEvent) {
        monitor.lock()
        if stopping {
            statistics.droppedAfterShutdown += 1
            monitor.unlock()
            metrics?.droppedAfterShutdown.increment(by: 1)
            return
        }
        if queue.count >= configuration.queueCapacity {
            guard case .wait(let milliseconds) = configuration.whenFull, waitForRoom(milliseconds: milliseconds) else {
                statistics.droppedQueueFull += 1
                monitor.unlock()
                metrics?.droppedQueueFull.increment(by: 1)
                return
            }
        }
        queue.append(event)
        acceptedSequence += 1
        statistics.acceptedEvents += 1
        if writerWaiting {
            writerWaiting = false
            monitor.signal(.work)
        }
        monitor.unlock()
    }

    /// With the monitor held: waits for room in the queue; false on timeout or shutdown.
    private func waitForRoom(milliseconds: Int) -> Bool {
        let deadline = ConditionLock<Wake>.deadline(after: Double(milliseconds) / 1000)
        while queue.count >= configuration.queueCapacity && !stopping {
            if writerWaiting {
                writerWaiting = false
                monitor.signal(.work)
            }
            if !monitor.wait(.progress, until: deadline) { break }
        }
        return queue.count < configuration.queueCapacity && !stopping
    }

    /// Runs `work` on the writer thread and waits for it.
    func perform(_ work: @escaping (Realm, inout [ObjectIdentifier: Realm]) throws -> Int) throws {
        let job = RecordJob(work: work)
        monitor.lock()
        if stopping {
            monitor.unlock()
            throw LoggingError(.shutDown, "the log writer was shut down; create a new LogWriter to record more objects")
        }
        jobs.append(job)
        jobsSubmitted += 1
        if writerWaiting {
            writerWaiting = false
            monitor.signal(.work)
        }
        monitor.unlock()
        job.done.wait()
        if let error = job.error { throw error }
    }

    // MARK: - Flush and shutdown

    /// Waits until every event logged and every object recorded before the
    /// call is committed (or counted as dropped). Returns false if that took
    /// longer than `timeout` seconds.
    @discardableResult
    public func flush(timeout: TimeInterval = 30) -> Bool {
        monitor.lock()
        defer { monitor.unlock() }
        let targetEvents = acceptedSequence
        let targetJobs = jobsSubmitted
        let deadline = ConditionLock<Wake>.deadline(after: timeout)
        while (handledSequence < targetEvents || jobsDone < targetJobs) && !finished {
            if writerWaiting {
                writerWaiting = false
                monitor.signal(.work)
            }
            if !monitor.wait(.progress, until: deadline) {
                return handledSequence >= targetEvents && jobsDone >= targetJobs
            }
        }
        return handledSequence >= targetEvents && jobsDone >= targetJobs
    }

    /// Stops accepting events and records, commits everything queued, and
    /// stops the writer thread. Later log calls are counted in
    /// ``Statistics/droppedAfterShutdown``. Idempotent. The events are then in
    /// the store; wait for the upload with
    /// `try await user.session.wait(for: .upload, timeout:)`.
    public func shutdown() {
        monitor.lock()
        stopping = true
        if writerWaiting {
            writerWaiting = false
            monitor.signal(.work)
        }
        if shutdownClaimed || finished {
            while !finished { monitor.wait(.progress) }
            monitor.unlock()
            return
        }
        shutdownClaimed = true
        monitor.unlock()
        stopped.wait()
        monitor.lock()
        finished = true
        monitor.broadcast(.progress)
        monitor.unlock()
    }

    // MARK: - The writer thread

    private func run(_ logRealm: Realm) {
        var recordRealms: [ObjectIdentifier: Realm] = [:]
        var batch: [[PendingLogEvent]] = []
        let host = configuration.host
        let appVersion = configuration.appVersion
        let pid = processId
        while true {
            monitor.lock()
            while queue.isEmpty && jobs.isEmpty && !stopping {
                writerWaiting = true
                monitor.wait(.work)
            }
            writerWaiting = false
            if queue.isEmpty && jobs.isEmpty && stopping {
                monitor.unlock()
                break
            }
            let queued = queue.count
            queue.take(into: &batch)
            let pendingJobs = jobs
            jobs.removeAll()
            // Room in the queue again: wake callers waiting for it.
            monitor.broadcast(.progress)
            monitor.unlock()

            for job in pendingJobs {
                do {
                    let recorded = try job.work(logRealm, &recordRealms)
                    // Counted before the caller is released, so its next read sees it.
                    locked { statistics.recordedObjects += recorded }
                } catch {
                    job.error =
                        (error as? LoggingError)
                        ?? LoggingError(.commitFailed, "the object could not be committed: \(error)", underlyingError: error)
                }
                job.done.signal()
            }

            var committed = 0
            var failed = 0
            var transactions = 0
            var lastError: String?
            var start = 0
            while start < queued {
                let end = min(queued, start + max(1, configuration.maxEventsPerTransaction))
                do {
                    try logRealm.write {
                        for index in start..<end {
                            try logRealm.appendEncoded(IngestLogEvent.self) { encoder in
                                Self.encode(&batch[position: index], host: host, pid: pid, appVersion: appVersion, into: &encoder)
                            }
                        }
                    }
                    committed += end - start
                    transactions += 1
                } catch {
                    failed += end - start
                    lastError = "\(error)"
                }
                start = end
            }
            for chunk in batch.indices { batch[chunk].removeAll(keepingCapacity: true) }

            monitor.lock()
            queue.recycle(&batch)
            handledSequence += queued
            jobsDone += pendingJobs.count
            statistics.committedEvents += committed
            statistics.droppedCommitFailed += failed
            statistics.transactions += transactions
            if let lastError { statistics.lastError = lastError }
            monitor.broadcast(.progress)
            monitor.unlock()
            metrics?.handled(committed: committed, failed: failed)
        }
        recordRealms.removeAll()
    }

    // MARK: - Helpers

    private func locked<T>(_ body: () -> T) -> T {
        monitor.withLock(body)
    }
}

/// A piece of work for the writer thread, waited for by its caller.
// @unchecked Sendable: `error` is written by the writer thread before
// `done.signal()` and read by the caller after `done.wait()`; the work closure
// captures values its caller keeps alive and does not touch while waiting.
final class RecordJob: @unchecked Sendable {
    let work: (Realm, inout [ObjectIdentifier: Realm]) throws -> Int
    var error: LoggingError?
    let done = DispatchSemaphore(value: 0)

    init(work: @escaping (Realm, inout [ObjectIdentifier: Realm]) throws -> Int) {
        self.work = work
    }
}
