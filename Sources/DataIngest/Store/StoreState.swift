import IngestCore
import IngestSupport

/// Everything about a ``SegmentStore`` that changes after open, in one
/// place: guarded by the store's monitor, and reachable only through a
/// ``StoreState/Held`` that ``StoreStateGuard`` hands out with the monitor
/// taken.
///
/// The files hold the rest: the active segment's bytes are written by the
/// commit leader (see `SegmentStore+Commit.swift`), the fields of an
/// ``ActiveSegment`` and a ``PendingCommit`` change under the same monitor.
struct StoreState {
    // MARK: Lifecycle

    /// `open` calls of this directory in this process not yet closed.
    var openCount = 1
    /// No commit is accepted any more.
    var closed = false
    /// The background threads are to stop.
    var stopping = false
    /// Background threads not yet stopped.
    var threadsRunning = 0

    // MARK: Commit pipeline (SegmentStore+Commit.swift)

    /// A committer is writing a group of transactions without the monitor.
    var leaderActive = false
    /// Transactions waiting for the next leader.
    var queue: [PendingCommit] = []
    /// Bytes (with commit frames) of `queue` and of the group being written.
    var queuedBytes = 0
    /// The segment commits go to; `nil` until the next commit creates one.
    var active: ActiveSegment?
    /// The buffer of the last transaction copied into the mapping (at most
    /// ``SegmentStore/spareBufferLimit`` bytes of capacity), handed to the
    /// next `commit` so that a small transaction allocates nothing.
    var spareTransactionBuffer: [UInt8] = []

    // MARK: Sealing (SegmentStore+Sealing.swift)

    /// Rotated active segments waiting for the sealer, oldest first.
    var sealQueue: [ActiveSegment] = []
    var lastSealError: SegmentStoreError?
    var lastSyncError: SegmentStoreError?

    // MARK: Sealed segments (SealedQueue.swift, SegmentStore+Upload.swift)

    /// Sealed segments waiting for upload, oldest first.
    var sealed = SealedQueue()

    // MARK: Cursors (SegmentStore+Cursors.swift)

    /// The latest committed value of every cursor.
    var cursors = CursorTable()
    /// What `CURSORS` holds (the cursors of every sealed segment).
    var persistedCursors = CursorTable()

    // MARK: Numbers and counters

    var nextSegmentNumber: UInt64 = 1
    /// Numbers below this are reserved in `SEQUENCE`.
    var reservedSegmentNumber: UInt64 = 1
    var countersSinceOpen = StoreCounters() {
        // The one place that owns the counters: every change goes to the metrics backend.
        didSet { metrics?.report(counters) }
    }
    /// The swift-metrics reporter (``StoreMetrics``); `nil` without a metrics backend.
    var metrics: StoreMetrics?

    /// ``countersSinceOpen`` with the pending values of now.
    var counters: StoreCounters {
        var c = countersSinceOpen
        c.pendingSegments = sealed.count + sealQueue.count + ((active?.transactionCount ?? 0) > 0 ? 1 : 0)
        c.pendingObjects = sealed.recordCount + sealQueue.reduce(0) { $0 + $1.recordCount } + (active?.recordCount ?? 0)
        c.pendingBytes = pendingBytes - queuedBytes
        return c
    }

    /// Bytes on disk not yet acknowledged, with the queued commits.
    var pendingBytes: Int {
        sealed.byteCount + sealQueue.reduce(0) { $0 + $1.size } + (active?.size ?? 0) + queuedBytes
    }

    /// Proof that the caller holds the store's monitor, and the way to the
    /// state. Made only by ``StoreStateGuard``; it must not outlive the
    /// span in which the monitor is held (do not store it or let a closure
    /// that runs later capture it).
    struct Held {
        fileprivate let storage: UnsafeMutablePointer<StoreState>
        unowned(unsafe) let monitor: StoreMonitor

        /// The guarded state (a stable address: reads after a wait see what
        /// other threads wrote meanwhile).
        var state: StoreState {
            unsafeAddress { UnsafePointer(storage) }
            nonmutating unsafeMutableAddress { storage }
        }

        /// Waits for `condition`, releasing the monitor meanwhile.
        func wait(_ condition: StoreCondition) { monitor.wait(condition) }

        /// Waits for `condition` until `deadline` (``StoreMonitor/now()``
        /// nanoseconds); `false` when the deadline passed.
        @discardableResult
        func wait(_ condition: StoreCondition, until deadline: UInt64) -> Bool {
            monitor.wait(condition, until: deadline)
        }

        func broadcast(_ condition: StoreCondition) { monitor.broadcast(condition) }
        func broadcastAll() { monitor.broadcastAll() }

        /// Releases the monitor for `body` (file I/O, a leader's write) and
        /// takes it again.
        @inline(__always)
        func unlocked<T>(_ body: () throws -> T) rethrows -> T {
            monitor.unlock()
            defer { monitor.lock() }
            return try body()
        }

        /// Ends a span begun with ``StoreStateGuard/lock()``.
        func unlock() { monitor.unlock() }
    }
}

/// The store's monitor and the ``StoreState`` it guards.
///
/// ```swift
/// let pending = guarded.withLock { $0.state.sealed.count }
/// let held = guarded.lock()          // a span that waits
/// while held.state.leaderActive { held.wait(.leader) }
/// held.unlock()
/// ```
// @unchecked Sendable: the state is reached only through `Held`, which is
// made only with the monitor taken.
final class StoreStateGuard: @unchecked Sendable {
    private let monitor = StoreMonitor()
    private let storage: UnsafeMutablePointer<StoreState>

    init(_ state: StoreState = StoreState()) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: state)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the monitor held.
    @inline(__always)
    func withLock<T, E: Error>(_ body: (StoreState.Held) throws(E) -> T) throws(E) -> T {
        monitor.lock()
        defer { monitor.unlock() }
        return try body(StoreState.Held(storage: storage, monitor: monitor))
    }

    /// Takes the monitor for a span that waits or releases it for a while;
    /// end it with ``StoreState/Held/unlock()``.
    @inline(__always)
    func lock() -> StoreState.Held {
        monitor.lock()
        return StoreState.Held(storage: storage, monitor: monitor)
    }
}
