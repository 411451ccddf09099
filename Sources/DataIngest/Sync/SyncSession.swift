import Foundation
import IngestCore
import IngestSupport

/// Uploads one user's segment store to the server, as `realm.syncSession`
/// (or `user.session`).
///
/// The session uploads sealed segments oldest first, several at a time
/// (``Configuration/maxUploadsInFlight``), over keep-alive connections. It
/// retries network errors, 5xx and 429 answers with exponential backoff and
/// jitter (honouring `Retry-After`), refreshes the access token on a 401,
/// and moves whatever the server refuses to quarantine, reporting it to
/// ``SyncManager/errorHandler``: nothing is dropped silently. It belongs to
/// the user, so it keeps uploading after the `Realm` is released, until the
/// user logs out.
///
/// ```swift
/// let session = realm.syncSession!
/// let token = session.addProgressNotification(for: .upload, mode: .forCurrentlyOutstandingWork) { progress in
///     print(progress.transferredObjects, "of", progress.transferrableObjects)
/// }
/// try await session.wait(for: .upload)
/// token?.invalidate()
/// ```
// @unchecked Sendable: all mutable state is in `box` (a LockedBox); the
// store and transport are thread-safe.
public final class SyncSession: @unchecked Sendable {
    struct Mutable {
        var store: SegmentStore?
        var loop: Task<Void, Never>?
        var running = false
        var suspended = false
        var generation = 0
        var connection: ConnectionState = .disconnected
        var invalidSession = false
        var lastError: SyncError?
        var observers: [Int: ProgressObserver] = [:]
        var nextObserverId = 0
        var acknowledgedObjects = 0
        /// Segments being uploaded; a segment leaves only after its answer was
        /// recorded, reported and notified, so `wait` returns after all three.
        var uploading: Set<UInt64> = []
        var reportedOpenError: String?
        /// Requests (uploads, token refreshes, logins) that got no answer;
        /// the exit grace period stops waiting when it grows.
        var transportFailures = 0
        /// Grows whenever the server was heard from again (an answer, or an
        /// accepted probe): ends every wait for a refused connection.
        var heardFromServer = 0
        /// When the last probe of the server's address started (the session's clock).
        var lastProbe = -Double.infinity
    }

    /// The user's segment store directory.
    public let storeDirectory: String
    let app: App
    weak var user: User?
    let box = LockedBox(Mutable())
    private let openLock = Lock()
    /// Made in `init`, not lazily: the first access of a lazy property from
    /// two threads at once is a data race (ThreadSanitizer found it when four
    /// threads opened realms of one user).
    let sink: SessionTransactionSink
    var configuration: Configuration { app.configuration.sync }

    init(app: App, storeDirectory: String) {
        self.app = app
        self.storeDirectory = storeDirectory
        self.sink = SessionTransactionSink()
        sink.session = self
    }

    // MARK: - State

    /// `active` while the user is logged in and the session is not suspended.
    public var state: State {
        box.withLock { state in
            if state.invalidSession { return .waitingForAccessToken }
            return state.running && !state.suspended ? .active : .inactive
        }
    }

    /// Whether the last request reached the server.
    public var connectionState: ConnectionState { box.withLock { $0.connection } }

    /// The last error reported to the error handler, if any.
    public var lastError: SyncError? { box.withLock { $0.lastError } }

    /// The store's counters (committed, pending, acknowledged, quarantined…),
    /// or `nil` when the store is not open.
    public var storeCounters: StoreCounters? { box.withLock { $0.store }?.counters }

    var isRunning: Bool { box.withLock { $0.running } }
    var transportFailures: Int { box.withLock { $0.transportFailures } }
    var acknowledgedObjects: Int { box.withLock { $0.acknowledgedObjects } }

    /// Stops uploading until ``resume()``; commits still go to disk.
    public func suspend() {
        box.withLock { $0.suspended = true }
    }

    /// Resumes uploading after ``suspend()``.
    public func resume() {
        box.withLock {
            $0.suspended = false
            $0.generation += 1
        }
    }

    /// Retries at once: cuts every backoff wait short (for example when the
    /// app learns the network is back).
    public func reconnect() {
        box.withLock { $0.generation += 1 }
    }

    // MARK: - Lifecycle

    /// Starts the upload loop (on login, or at app start for users logged in before).
    func start() {
        box.withLock { state in
            guard !state.running else { return }
            state.running = true
            state.invalidSession = false
            state.loop = Task(executorPreference: app.syncExecutor) { [self] in await run() }
        }
    }

    /// Stops the upload loop, waits for it, and closes the store.
    func stop() async {
        let loop = box.withLock { state -> Task<Void, Never>? in
            state.running = false
            state.generation += 1
            defer { state.loop = nil }
            return state.loop
        }
        await loop?.value
        let store = box.withLock { state -> SegmentStore? in
            defer { state.store = nil }
            return state.store
        }
        try? store?.close()
    }

    /// The configuration of the user's segment store: the app's
    /// ``App/Configuration/segmentStore`` in ``storeDirectory``, reporting to
    /// the app's ``App/Configuration/metricsFactory`` unless it has its own.
    var storeConfiguration: SegmentStore.Configuration {
        var configuration = app.configuration.segmentStore
        configuration.directory = storeDirectory
        if configuration.metricsFactory == nil { configuration.metricsFactory = app.configuration.metricsFactory }
        return configuration
    }

    /// The key the user's segment store is encrypted with (`nil`: not encrypted).
    var storeEncryptionKey: Data? { app.configuration.segmentStore.encryptionKey }

    /// The store, opened on first use. Opening is serialized: a second
    /// handle closed again would flush (seal) the shared store early.
    /// Errors are reported once per distinct message.
    func openStore() throws -> SegmentStore {
        if let store = box.withLock({ $0.store }) { return store }
        return try openLock.withLock { () throws -> SegmentStore in
            if let store = box.withLock({ $0.store }) { return store }
            do {
                try app.records.makeDirectory(storeDirectory)
                let store = try SegmentStore.open(storeConfiguration)
                box.withLock { state in
                    state.store = store
                    state.reportedOpenError = nil
                }
                return store
            } catch {
                let message = "cannot open the segment store in \(storeDirectory): \(error)"
                let first = box.withLock { state -> Bool in
                    defer { state.reportedOpenError = message }
                    return state.reportedOpenError != message
                }
                if first { report(SyncError(.store, message)) }
                throw error
            }
        }
    }

    /// Pending objects in the store, opening it briefly if needed (0 if it
    /// was never created).
    func pendingObjectsOnDisk() -> Int { withStoreCounters { $0.pendingObjects } }
    func pendingSegmentsOnDisk() -> Int { withStoreCounters { $0.pendingSegments } }

    private func withStoreCounters(_ read: (StoreCounters) -> Int) -> Int {
        if let store = box.withLock({ $0.store }) { return read(store.counters) }
        guard FileManager.default.fileExists(atPath: storeDirectory) else { return 0 }
        guard let store = try? SegmentStore.open(storeConfiguration) else { return 0 }
        defer { try? store.close() }
        return read(store.counters)
    }

    func report(_ error: SyncError) {
        box.withLock { $0.lastError = error }
        app.syncManager.report(error, session: self)
    }

    // MARK: - Waiting

    /// Waits until everything committed before the call is uploaded and
    /// acknowledged (or quarantined, and reported). Cancel the task to stop
    /// waiting; uploading goes on.
    ///
    /// ```swift
    /// try await realm.syncSession?.wait(for: .upload)
    /// ```
    public func wait(for direction: ProgressDirection) async throws {
        try await wait(for: direction, timeout: .infinity)
    }

    /// As ``wait(for:)``, giving up after `timeout` seconds with
    /// ``SyncError/Code/timedOut`` (uploading goes on).
    public func wait(for direction: ProgressDirection, timeout: TimeInterval) async throws {
        guard direction == .upload else { return }
        let store = try openStore()
        try store.flush()
        guard let target = store.pendingSegments().last?.number else { return }
        let clock = configuration.clock
        let deadline = clock.now() + timeout
        while store.pendingSegments().contains(where: { $0.number <= target })
            || box.withLock({ $0.uploading.contains { $0 <= target } })
        {
            try Task.checkCancellation()
            guard isRunning else {
                throw SyncError(
                    .sessionStopped, "the session stopped (the user logged out) with data still pending; it is uploaded at the next login")
            }
            if clock.now() >= deadline {
                let left = store.counters.pendingObjects
                throw SyncError(
                    .timedOut,
                    "\(left) objects were still pending after \(timeout) s; they stay on disk and uploading goes on (last error: \(lastError.map { "\($0)" } ?? "none"))"
                )
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    /// Sleeps `seconds` of real time (polling for work), returning early
    /// when the session stops or ``reconnect()``/``resume()`` is called.
    func pause(_ seconds: TimeInterval) async {
        await SystemSyncClock().pause(seconds, interrupted: interruption())
    }

    /// Waits a retry delay on the session's clock
    /// (``Configuration/clock``), returning early when the session stops or
    /// ``reconnect()``/``resume()`` is called.
    func backOff(_ seconds: TimeInterval) async {
        await configuration.clock.pause(seconds, interrupted: interruption())
    }

    /// Whether the session stopped or was told to retry at once since now.
    func interruption() -> @Sendable () -> Bool {
        let start = box.withLock { $0.generation }
        return { [box] in box.withLock { !$0.running || $0.generation != start } }
    }
}
