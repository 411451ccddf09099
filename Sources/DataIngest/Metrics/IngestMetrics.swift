import CoreMetrics
import IngestSupport

/// The SDK's swift-metrics: the names it reports under (Docs/ClientMetrics.md
/// lists them with their meaning) and the backend it reports to.
///
/// Nothing is made or reported while no backend is bootstrapped
/// (`MetricsSystem.bootstrap`) and none is configured
/// (``App/Configuration/metricsFactory``): the reporters below are `nil`
/// then, and the places that own the counters skip them with one branch.
enum IngestMetrics {
    /// The backend to report to: `configured`, else the bootstrapped one;
    /// `nil` when that is swift-metrics' no-op default.
    static func factory(_ configured: (any MetricsFactory)?) -> (any MetricsFactory)? {
        let factory = configured ?? MetricsSystem.factory
        return factory is NOOPMetricsHandler ? nil : factory
    }

    // MARK: Names

    static let committedObjects = "dataingest_store_committed_objects_total"
    static let committedTransactions = "dataingest_store_committed_transactions_total"
    static let committedBytes = "dataingest_store_committed_bytes_total"
    static let failedCommits = "dataingest_store_failed_commits_total"
    static let acknowledgedObjects = "dataingest_store_acknowledged_objects_total"
    static let acknowledgedSegments = "dataingest_store_acknowledged_segments_total"
    static let acknowledgedBytes = "dataingest_store_acknowledged_bytes_total"
    static let quarantinedObjects = "dataingest_store_quarantined_objects_total"
    static let quarantinedSegments = "dataingest_store_quarantined_segments_total"
    static let droppedObjects = "dataingest_store_dropped_objects_total"
    static let droppedSegments = "dataingest_store_dropped_segments_total"
    static let pendingSegments = "dataingest_store_pending_segments"
    static let pendingObjects = "dataingest_store_pending_objects"
    static let pendingBytes = "dataingest_store_pending_bytes"

    static let uploads = "dataingest_sync_uploads_total"
    static let uploadRetries = "dataingest_sync_upload_retries_total"
    static let uploadDuration = "dataingest_sync_upload_duration"

    static let logEventsCommitted = "dataingest_log_events_committed_total"
    static let logEventsDropped = "dataingest_log_events_dropped_total"
}

/// The metrics of one segment store and of the sync session uploading it,
/// all with the dimension `store` (the store's id), so that several users'
/// stores in one process stay apart.
///
/// The store's counters are reported from the one place that owns them,
/// ``StoreState/countersSinceOpen``: every change is passed here with the
/// store's monitor held (which also guards this object's state), the
/// counters as the difference to what was reported before and the pending
/// gauges as they are (counting them is a few loads: the sealed queue keeps
/// its totals). The session reports its uploads from its upload loop.
// @unchecked Sendable: `reported` is only touched with the store's monitor
// held; the handlers are the backend's (Sendable).
final class StoreMetrics: @unchecked Sendable {
    let dimensions: [(String, String)]

    private let committedObjects, committedTransactions, committedBytes, failedCommits: any CounterHandler
    private let acknowledgedObjects, acknowledgedSegments, acknowledgedBytes: any CounterHandler
    private let quarantinedObjects, quarantinedSegments, droppedObjects, droppedSegments: any CounterHandler
    private let pendingSegments, pendingObjects, pendingBytes: any RecorderHandler

    private let uploads: any CounterHandler
    private let retriesNetwork, retriesAuth, retriesServer: any CounterHandler
    private let uploadDuration: any TimerHandler

    /// The counters as last reported.
    private var reported = StoreCounters()

    /// The store's metrics, or `nil` without a backend.
    static func make(_ configured: (any MetricsFactory)?, storeId: SegmentStoreID) -> StoreMetrics? {
        IngestMetrics.factory(configured).map { StoreMetrics(factory: $0, storeId: storeId) }
    }

    private init(factory: any MetricsFactory, storeId: SegmentStoreID) {
        let dimensions = [("store", storeId.description)]
        self.dimensions = dimensions
        func counter(_ label: String, _ extra: [(String, String)] = []) -> any CounterHandler {
            factory.makeCounter(label: label, dimensions: dimensions + extra)
        }
        func gauge(_ label: String) -> any RecorderHandler {
            factory.makeRecorder(label: label, dimensions: dimensions, aggregate: false)
        }
        committedObjects = counter(IngestMetrics.committedObjects)
        committedTransactions = counter(IngestMetrics.committedTransactions)
        committedBytes = counter(IngestMetrics.committedBytes)
        failedCommits = counter(IngestMetrics.failedCommits)
        acknowledgedObjects = counter(IngestMetrics.acknowledgedObjects)
        acknowledgedSegments = counter(IngestMetrics.acknowledgedSegments)
        acknowledgedBytes = counter(IngestMetrics.acknowledgedBytes)
        quarantinedObjects = counter(IngestMetrics.quarantinedObjects)
        quarantinedSegments = counter(IngestMetrics.quarantinedSegments)
        droppedObjects = counter(IngestMetrics.droppedObjects)
        droppedSegments = counter(IngestMetrics.droppedSegments)
        pendingSegments = gauge(IngestMetrics.pendingSegments)
        pendingObjects = gauge(IngestMetrics.pendingObjects)
        pendingBytes = gauge(IngestMetrics.pendingBytes)
        uploads = counter(IngestMetrics.uploads)
        retriesNetwork = counter(IngestMetrics.uploadRetries, [("reason", "network")])
        retriesAuth = counter(IngestMetrics.uploadRetries, [("reason", "auth")])
        retriesServer = counter(IngestMetrics.uploadRetries, [("reason", "server")])
        uploadDuration = factory.makeTimer(label: IngestMetrics.uploadDuration, dimensions: dimensions)
    }

    // MARK: The store (its monitor held)

    /// Reports `counters` (with their pending values): what the counters
    /// added since the last call, and the pending gauges.
    func report(_ counters: StoreCounters) {
        let old = reported
        reported = counters
        Self.add(committedObjects, counters.committedObjects - old.committedObjects)
        Self.add(committedTransactions, counters.committedTransactions - old.committedTransactions)
        Self.add(committedBytes, counters.committedBytes - old.committedBytes)
        Self.add(failedCommits, counters.failedCommits - old.failedCommits)
        Self.add(acknowledgedObjects, counters.acknowledgedObjects - old.acknowledgedObjects)
        Self.add(acknowledgedSegments, counters.acknowledgedSegments - old.acknowledgedSegments)
        Self.add(acknowledgedBytes, counters.acknowledgedBytes - old.acknowledgedBytes)
        Self.add(quarantinedObjects, counters.quarantinedObjects - old.quarantinedObjects)
        Self.add(quarantinedSegments, counters.quarantinedSegments - old.quarantinedSegments)
        Self.add(droppedObjects, counters.droppedObjects - old.droppedObjects)
        Self.add(droppedSegments, counters.droppedSegments - old.droppedSegments)
        pendingSegments.record(Int64(counters.pendingSegments))
        pendingObjects.record(Int64(counters.pendingObjects))
        pendingBytes.record(Int64(counters.pendingBytes))
    }

    private static func add(_ counter: any CounterHandler, _ delta: Int) {
        if delta > 0 { counter.increment(by: Int64(delta)) }
    }

    // MARK: The sync session

    /// Why an upload is sent again.
    enum RetryReason {
        /// No answer: connection refused or lost, timeout.
        case network
        /// A 401, or the access token could not be refreshed.
        case auth
        /// 408, 429 or 5xx.
        case server
    }

    /// One upload request answered with `status` after `nanoseconds`; counts
    /// the upload (200) or the retry its answer leads to.
    func uploadAnswered(status: Int, nanoseconds: UInt64) {
        uploadDuration.recordNanoseconds(Int64(clamping: nanoseconds))
        switch status {
        case 200: uploads.increment(by: 1)
        case 401: retriesAuth.increment(by: 1)
        case 408, 429, 500...599: retriesServer.increment(by: 1)
        default: break  // refused for good: counted by the store's quarantine counters
        }
    }

    /// A retry that had no answer to count (`.network`), or a failed token refresh (`.auth`).
    func uploadRetried(_ reason: RetryReason) {
        switch reason {
        case .network: retriesNetwork.increment(by: 1)
        case .auth: retriesAuth.increment(by: 1)
        case .server: retriesServer.increment(by: 1)
        }
    }
}

/// The log writer's event counters: committed, and dropped by reason
/// (`queue_full`, `after_shutdown`, `commit_failed`, as in
/// ``LogWriter/Statistics``). Reported after the writer's lock is released,
/// so a backend that logs cannot wait on it.
final class LogWriterMetrics: Sendable {
    let committed, droppedQueueFull, droppedAfterShutdown, droppedCommitFailed: any CounterHandler

    /// The writer's metrics, or `nil` without a backend.
    static func make(_ configured: (any MetricsFactory)?) -> LogWriterMetrics? {
        IngestMetrics.factory(configured).map(LogWriterMetrics.init)
    }

    private init(factory: any MetricsFactory) {
        committed = factory.makeCounter(label: IngestMetrics.logEventsCommitted, dimensions: [])
        droppedQueueFull = factory.makeCounter(label: IngestMetrics.logEventsDropped, dimensions: [("reason", "queue_full")])
        droppedAfterShutdown = factory.makeCounter(label: IngestMetrics.logEventsDropped, dimensions: [("reason", "after_shutdown")])
        droppedCommitFailed = factory.makeCounter(label: IngestMetrics.logEventsDropped, dimensions: [("reason", "commit_failed")])
    }

    /// Counts a group the writer handled.
    func handled(committed: Int, failed: Int) {
        if committed > 0 { self.committed.increment(by: Int64(committed)) }
        if failed > 0 { droppedCommitFailed.increment(by: Int64(failed)) }
    }
}
