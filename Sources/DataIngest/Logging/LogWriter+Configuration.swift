import CoreMetrics
#if canImport(Glibc)
import Glibc
#endif
import Foundation

extension LogWriter {
    /// What a log call does when the writer's queue is full.
    public enum FullQueuePolicy: Sendable, Hashable {
        /// Drop the new event at once and count it in
        /// ``Statistics/droppedEvents``. The caller never waits. The default.
        case dropNewest
        /// Wait up to `milliseconds` for room (the writer committing what is
        /// queued), then drop and count the event. Bounds the caller's wait;
        /// use it when completeness matters more than latency.
        case wait(milliseconds: Int)
    }

    /// How a ``LogWriter`` queues and commits; every property has a
    /// documented default. The events are stored in the user's segment
    /// store, so its settings (durability, disk budget, encryption at rest
    /// with `encryptionKey`) are `App.Configuration.segmentStore`'s.
    ///
    /// ```swift
    /// var configuration = LogWriter.Configuration()
    /// configuration.queueCapacity = 100_000
    /// configuration.whenFull = .wait(milliseconds: 50)
    /// configuration.appVersion = "2.4.1"
    /// let writer = try LogWriter(user: user, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The most events waiting in memory for the writer thread. Memory
        /// is bounded by this times the size of an event. Default 65,536.
        public var queueCapacity: Int = 65_536
        /// The most events committed in one transaction (the writer commits
        /// whatever is queued, in groups of at most this). Default 4,096.
        public var maxEventsPerTransaction: Int = 4_096
        /// What a log call does when the queue is full. Default ``FullQueuePolicy/dropNewest``.
        public var whenFull: FullQueuePolicy = .dropNewest
        /// Stored in every event's `appVersion`. Default: the environment
        /// variable `DATAINGEST_APP_VERSION`, else the empty string.
        public var appVersion: String
        /// Stored in every event's `host`. Default: the machine's host name.
        public var host: String
        /// The swift-metrics backend the committed and dropped events are
        /// counted in (`dataingest_log_events_committed_total`,
        /// `dataingest_log_events_dropped_total`; Docs/ClientMetrics.md).
        /// Default `nil`: the user's ``App/Configuration/metricsFactory``
        /// with ``LogWriter/init(user:configuration:)``, else the one
        /// bootstrapped with `MetricsSystem.bootstrap`; nothing is reported
        /// while none is.
        public var metricsFactory: (any MetricsFactory)? = nil

        /// A configuration with the defaults above.
        public init() {
            appVersion = ProcessInfo.processInfo.environment["DATAINGEST_APP_VERSION"] ?? ""
            var buffer = [CChar](repeating: 0, count: 256)
            host =
                gethostname(&buffer, buffer.count - 1) == 0
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        }
    }

    /// The writer's counters since it was created.
    public struct Statistics: Sendable, Hashable {
        /// Events accepted into the queue.
        public var acceptedEvents = 0
        /// Events committed to the store (kept on disk until uploaded).
        public var committedEvents = 0
        /// Events that never reached the store: ``droppedQueueFull`` plus
        /// ``droppedAfterShutdown`` plus ``droppedCommitFailed``.
        public var droppedEvents: Int { droppedQueueFull + droppedAfterShutdown + droppedCommitFailed }
        /// Events dropped because the queue was full (``FullQueuePolicy``).
        public var droppedQueueFull = 0
        /// Events logged after ``LogWriter/shutdown()``.
        public var droppedAfterShutdown = 0
        /// Events whose commit failed (for example the store's disk budget
        /// was full with the `.fail` or `.block` budget policy); see ``lastError``.
        public var droppedCommitFailed = 0
        /// Events in the queue now.
        public var queuedEvents = 0
        /// Transactions of log events committed.
        public var transactions = 0
        /// Objects committed through ``IngestRecorder``.
        public var recordedObjects = 0
        /// The last commit error, if any.
        public var lastError: String?
    }
}
