#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport

/// What one app's uploads did on this instance recently, for the status
/// page: per collection the accepted and rejected objects per second and
/// the ingest lag over the last minutes, the last rejected objects with
/// their reasons, the last uploads, the sink's health, and the rows the
/// sink holds (refreshed by ``SinkMonitor``). Memory is fixed: ring buffers,
/// at most ``maxCollections`` collections tracked.
///
/// ```swift
/// let activity = IngestActivity()
/// activity.recordStored(StoredUpload(…))
/// let collections = activity.collectionStatistics()
/// ```
package final class IngestActivity: Sendable {
    /// One upload as the status page lists it.
    package struct Upload: Sendable, Equatable {
        /// When it was answered, milliseconds since 1970.
        package var at: Int64
        package var storeId: String?
        package var segmentNumber: UInt64?
        package var userId: String?
        package var deviceId: String?
        package var accepted = 0
        package var duplicate = 0
        package var rejected = 0
        /// Segment creation (the client's clock) to stored, in milliseconds.
        package var lagMilliseconds: Int64?
        /// The HTTP status of the answer.
        package var status: Int
        /// `replayed` for an answer from the receipt, the `error_code` of a failure, nil otherwise.
        package var outcome: String?

        package init(at: Int64, status: Int) {
            self.at = at
            self.status = status
        }
    }

    /// One rejected object as the status page lists it.
    package struct Rejection: Sendable, Equatable {
        package var at: Int64
        package var collection: String
        package var code: String
        package var reason: String
        package var storeId: String
        package var segmentNumber: UInt64
        /// The object's record index in the segment.
        package var index: Int
    }

    /// The sink's health as uploads and row counts saw it.
    package struct SinkHealth: Sendable, Equatable {
        /// The last successful sink call (write or row count), milliseconds since 1970.
        package var lastSuccess: Int64?
        /// Seconds the last successful write took.
        package var lastWriteSeconds: Double?
        /// The last failure's time and message.
        package var lastFailure: (at: Int64, message: String)?
        /// When the current run of failures began; nil while healthy.
        package var failingSince: Int64?

        package var isHealthy: Bool { failingSince == nil }

        package static func == (a: SinkHealth, b: SinkHealth) -> Bool {
            a.lastSuccess == b.lastSuccess && a.lastWriteSeconds == b.lastWriteSeconds && a.failingSince == b.failingSince
                && a.lastFailure?.at == b.lastFailure?.at && a.lastFailure?.message == b.lastFailure?.message
        }
    }

    /// The rows the sink holds, as last counted.
    package struct RowCounts: Sendable {
        package var counts: [CollectionRowCount]
        /// When they were counted, milliseconds since 1970.
        package var at: Int64
    }

    /// Per collection over the last minutes, as the status page shows it.
    package struct CollectionStatistics: Sendable {
        package var collection: String
        /// Accepted objects per second over the last minute and the last ten
        /// (over the uptime while it is shorter).
        package var acceptedPerSecond1m: Double
        package var acceptedPerSecond10m: Double
        /// Rejected objects in the last ten minutes.
        package var rejected10m: Int
        /// Ingest lag over the last ten minutes.
        package var lag: LagHistory.Summary?
    }

    /// Collections tracked per app; objects of others are counted under `(other)`.
    package static let maxCollections = 256
    /// Reason codes counted (they are the server's own, a short list; the bound is a safety net).
    package static let maxCodes = 64
    /// Uploads and rejections kept for the lists.
    package static let recentCount = 20
    /// The window of the per-collection figures, in seconds.
    package static let window = 600

    struct PerCollection {
        let accepted: RateHistory
        let rejected: RateHistory
        let lag: LagHistory
    }

    struct State {
        var collections: [String: PerCollection] = [:]
        var uploads: [Upload] = []
        var rejections: [Rejection] = []
        var health = SinkHealth()
        var rows: RowCounts?
        var byCode: [String: Int] = [:]
    }

    /// Accepted objects per second of the app, all collections (the status page's plot).
    package let accepted: RateHistory
    private let state = LockedBox(State())
    private let clock: @Sendable () -> Int64
    private let startedAt: Int64

    /// Creates an empty record.
    /// - Parameter clock: milliseconds since 1970 (a seam for tests).
    package init(clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }) {
        self.clock = clock
        startedAt = clock()
        let seconds: @Sendable () -> Int64 = { clock() / 1000 }
        accepted = RateHistory(seconds: Self.window, clock: seconds)
    }

    // MARK: - Recording

    /// A segment whose objects the sink stored.
    ///
    /// - Parameters:
    ///   - objects: what went to the sink, with `duplicates[i]` for each;
    ///   - rejections: the objects refused (validation or their transaction);
    ///   - createdAtMillis: the segment header's creation time (the client's clock).
    func recordStored(
        key: SegmentKey, claims: AccessClaims?, objects: [SinkObject], duplicates: [Bool],
        rejections: [UploadAnswer.RejectedObject], createdAtMillis: Int64, writeSeconds: Double
    ) {
        let now = clock()
        let lag = now - createdAtMillis
        // Per collection: stored (accepted or duplicate) and accepted. Consecutive
        // objects mostly share a collection: one dictionary update per run.
        var stored: [String: (objects: Int, accepted: Int)] = [:]
        var run: (collection: String, objects: Int, accepted: Int)?
        // By index: copying each object would retain its fields.
        for index in objects.indices {
            if run?.collection != objects[index].collection {
                if let run {
                    stored[run.collection, default: (0, 0)].objects += run.objects; stored[run.collection]!.accepted += run.accepted
                }
                run = (objects[index].collection, 0, 0)
            }
            run!.objects += 1
            if !(index < duplicates.count && duplicates[index]) { run!.accepted += 1 }
        }
        if let run { stored[run.collection, default: (0, 0)].objects += run.objects; stored[run.collection]!.accepted += run.accepted }
        let accepted = stored.compactMapValues { $0.accepted > 0 ? $0.accepted : nil }
        var rejected: [String: Int] = [:]
        for rejection in rejections { rejected[rejection.collection, default: 0] += 1 }
        var upload = Upload(at: now, status: 200)
        upload.storeId = key.storeId.uuidString
        upload.segmentNumber = key.segmentNumber
        upload.userId = claims?.userId
        upload.deviceId = claims?.deviceId
        upload.accepted = accepted.values.reduce(0, +)
        upload.duplicate = objects.count - upload.accepted
        upload.rejected = rejections.count
        upload.lagMilliseconds = lag
        let listed = rejections.suffix(Self.recentCount).map { rejection in
            Rejection(
                at: now, collection: rejection.collection, code: rejection.errorCode,
                reason: String(rejection.reason.prefix(500)), storeId: key.storeId.uuidString,
                segmentNumber: key.segmentNumber, index: rejection.index)
        }
        self.accepted.record(upload.accepted)
        let touched = Set(stored.keys).union(rejected.keys)
        state.withLock { state in
            for collection in touched {
                let tracked = collectionLocked(collection, in: &state)
                if let count = accepted[collection] { tracked.accepted.record(count) }
                if let count = rejected[collection] { tracked.rejected.record(count) }
                if stored[collection] != nil { tracked.lag.record(milliseconds: lag) }
            }
            append(upload, to: &state.uploads)
            for rejection in listed { append(rejection, to: &state.rejections) }
            for rejection in rejections where state.byCode[rejection.errorCode] != nil || state.byCode.count < Self.maxCodes {
                state.byCode[rejection.errorCode, default: 0] += 1
            }
            state.health.lastSuccess = now
            state.health.lastWriteSeconds = writeSeconds
            state.health.failingSince = nil
        }
    }

    /// A segment answered from its receipt (received before).
    package func recordReplay(key: SegmentKey, claims: AccessClaims?) {
        var upload = Upload(at: clock(), status: 200)
        upload.storeId = key.storeId.uuidString
        upload.segmentNumber = key.segmentNumber
        upload.userId = claims?.userId
        upload.deviceId = claims?.deviceId
        upload.outcome = "replayed"
        state.withLock { append(upload, to: &$0.uploads) }
    }

    /// An upload answered with an error (`status` ≥ 400). `sinkFailure`:
    /// the sink failed (503 `sink_unavailable`, 500 `sink_error`), which
    /// makes the sink unhealthy until its next success.
    package func recordFailure(status: Int, code: String, message: String, sinkFailure: Bool) {
        let now = clock()
        var upload = Upload(at: now, status: status)
        upload.outcome = code
        state.withLock { state in
            append(upload, to: &state.uploads)
            if sinkFailure { failLocked(message, at: now, in: &state) }
        }
    }

    /// The sink's row counts (``SinkMonitor``): a successful sink call too.
    package func recordRowCounts(_ counts: [CollectionRowCount]) {
        let now = clock()
        state.withLock { state in
            state.rows = RowCounts(counts: counts, at: now)
            state.health.lastSuccess = now
            state.health.failingSince = nil
        }
    }

    /// Counting the sink's rows failed: the sink is unhealthy; the last counts are kept.
    package func recordRowCountFailure(_ message: String) {
        let now = clock()
        state.withLock { failLocked(message, at: now, in: &$0) }
    }

    // MARK: - Reading

    /// The current time of the record's clock, milliseconds since 1970.
    package func now() -> Int64 { clock() }

    /// The last uploads, newest first.
    package var recentUploads: [Upload] { state.withLock { $0.uploads.reversed() } }
    /// The last rejected objects, newest first.
    package var recentRejections: [Rejection] { state.withLock { $0.rejections.reversed() } }
    /// Rejected objects since start-up per reason code (`wrongType`, …), most frequent first.
    package var rejectionsByCode: [(code: String, count: Int)] {
        state.withLock { $0.byCode }.map { ($0.key, $0.value) }.sorted { $0.count != $1.count ? $0.count > $1.count : $0.code < $1.code }
    }
    /// The sink's health.
    package var sinkHealth: SinkHealth { state.withLock { $0.health } }
    /// The rows the sink held when last counted, nil before the first count.
    package var rowCounts: RowCounts? { state.withLock { $0.rows } }

    /// Per collection seen in uploads (or named in `also`), sorted by name.
    package func collectionStatistics(also names: [String] = []) -> [CollectionStatistics] {
        let uptime = max(1, Int((clock() - startedAt) / 1000))
        let tracked = state.withLock { state -> [String: PerCollection] in
            for name in names where state.collections[name] == nil && state.collections.count < Self.maxCollections {
                _ = collectionLocked(name, in: &state)
            }
            return state.collections
        }
        return tracked.keys.sorted().map { name in
            let collection = tracked[name]!
            let accepted = collection.accepted.snapshot()
            let rejected = collection.rejected.snapshot()
            func perSecond(_ counts: [UInt64], _ seconds: Int) -> Double {
                let span = min(seconds, uptime, counts.count)
                return Double(counts.suffix(span).reduce(0, +)) / Double(max(1, span))
            }
            return CollectionStatistics(
                collection: name, acceptedPerSecond1m: perSecond(accepted, 60),
                acceptedPerSecond10m: perSecond(accepted, Self.window),
                rejected10m: Int(rejected.reduce(0, +)),
                lag: collection.lag.summary(overSeconds: Self.window))
        }
    }

    // MARK: - Plumbing

    private func collectionLocked(_ name: String, in state: inout State) -> PerCollection {
        let key = state.collections[name] != nil || state.collections.count < Self.maxCollections ? name : "(other)"
        if let existing = state.collections[key] { return existing }
        let seconds: @Sendable () -> Int64 = { [clock] in clock() / 1000 }
        let created = PerCollection(
            accepted: RateHistory(seconds: Self.window, clock: seconds),
            rejected: RateHistory(seconds: Self.window, clock: seconds),
            lag: LagHistory(windowSeconds: Self.window, clock: seconds))
        state.collections[key] = created
        return created
    }

    private func failLocked(_ message: String, at now: Int64, in state: inout State) {
        state.health.lastFailure = (now, String(message.prefix(500)))
        if state.health.failingSince == nil { state.health.failingSince = now }
    }

    private func append<T>(_ item: T, to list: inout [T]) {
        list.append(item)
        if list.count > Self.recentCount { list.removeFirst(list.count - Self.recentCount) }
    }
}
