import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport

/// Keeps every committed object on disk, gzip-compressed, until the server
/// has acknowledged it.
///
/// A commit copies the transaction's checksummed frames into a shared memory
/// mapping of the preallocated *active* segment file (or appends them with one
/// `write`, see ``Configuration/preallocationBytes``); either way they are in
/// the kernel's page cache when `commit` returns, so `kill -9` never loses a
/// committed transaction. Concurrent commits are grouped by a leader; the
/// ``Durability`` setting decides what power loss can lose. The active
/// segment is sealed by size, age or ``flush()`` into a `.seg.gz` file by a
/// background thread. Uploads read sealed segments oldest first
/// (``pendingSegments()``), then ``acknowledge(segment:)`` or
/// ``reject(segment:records:)`` them. The format is in Docs/SegmentFormat.md.
///
/// ```swift
/// let store = try SegmentStore.open(SegmentStore.Configuration(directory: path))
/// try store.commit { tx in
///     try tx.append(collection: "WeatherSensor", document: bson)
/// }
/// for segment in store.pendingSegments() {
///     upload(segment.path)
///     try store.acknowledge(segment: segment.number)
/// }
/// try store.close()
/// ```
///
/// One process may open a directory at a time (an exclusive lock on
/// `LOCK`); within a process, ``open(_:)`` of the same directory returns the
/// same instance. Background threads keep the store alive until ``close()``.
///
/// The type is split by concern: this file (open, flush, close, counters),
/// `StoreState.swift` (the mutable state and its monitor),
/// `SegmentStore+Commit.swift` (the commit pipeline),
/// `SegmentStore+ActiveSegment.swift` (creating, extending and mapping the
/// active file), `SegmentStore+Sealing.swift` (rotation, the sealer and the
/// syncer), `SealedQueue.swift` and `SegmentStore+Upload.swift` (the sealed
/// segments, acknowledgement and quarantine), `SegmentStore+Recovery.swift`
/// (with `SegmentStore+PowerLoss.swift`) and `SegmentStore+Encryption.swift`.
// @unchecked Sendable: all mutable state is in `guarded` (reachable only with
// its monitor held), except what only the current commit leader touches
// (`leaderBuffers`, appending to the active file or its mapping), which the
// `leaderActive` flag makes exclusive; a committer copies into the mapping
// itself only while it holds the monitor and no leader is active.
public final class SegmentStore: @unchecked Sendable {
    /// The configuration the store was opened with.
    public let configuration: Configuration
    /// The store's directory, canonical (symbolic links resolved).
    public let directory: String
    /// The store's identity, written into every segment header (kept in `STORE_ID`).
    public let storeId: SegmentStoreID
    /// Whether the store's files are encrypted (``Configuration/encryptionKey`` is set).
    public var isEncrypted: Bool { encryptionKey != nil }
    let encryptionKey: SegmentEncryptionKey?

    let fs: any StoreFileSystem
    /// The monitor and the state it guards.
    let guarded = StoreStateGuard()
    /// Whether active segments are preallocated and memory-mapped (see
    /// ``Configuration/preallocationBytes``); decided at open.
    let mapsActiveSegments: Bool
    /// ``Configuration/preallocationBytes`` rounded up to whole pages.
    let preallocationStep: Int
    let fullDurability: Bool
    /// The swift-metrics reporter (the store's counters through ``StoreState``,
    /// the session's uploads directly); `nil` without a metrics backend.
    let metrics: StoreMetrics?
    let lockFD: Int32
    let directoryFD: Int32
    var quarantineDirectory: String { directory + "/quarantine" }

    /// The commit leader's scratch buffers (see `SegmentStore+Commit.swift`).
    let leaderBuffers = LeaderBuffers()

    static let registry = LockedBox<[String: SegmentStore]>([:])
    /// Transactions at least this large are written from their own buffer.
    static let directWriteThreshold = 16 << 10

    /// Plaintext gathered into one encrypted block before a new one starts.
    static let encryptedBlockTarget = 8 << 20

    init(
        configuration: Configuration, directory: String, storeId: SegmentStoreID, encryptionKey: SegmentEncryptionKey?,
        lockFD: Int32, directoryFD: Int32
    ) {
        self.configuration = configuration
        self.directory = directory
        self.storeId = storeId
        self.encryptionKey = encryptionKey
        self.fs = configuration.fileSystem
        self.lockFD = lockFD
        self.directoryFD = directoryFD
        self.fullDurability = configuration.durability == .full
        self.preallocationStep = Self.roundUpToPage(max(configuration.preallocationBytes, 0))
        self.mapsActiveSegments =
            configuration.preallocationBytes > 0 && encryptionKey == nil
            && Self.preallocationIsReliable(directory: directory)
        let metrics = StoreMetrics.make(configuration.metricsFactory, storeId: storeId)
        self.metrics = metrics
        guarded.withLock { $0.state.metrics = metrics }
    }

    /// Opens (or creates) the store in `configuration.directory`, recovering
    /// from any crash: sealed segments are verified (corrupt ones go to
    /// `quarantine/`), torn active segments are cut back to their last complete
    /// transaction and sealed. Opening a directory this process already has open
    /// returns the same store (the first configuration wins, but the
    /// encryption key must be the same).
    ///
    /// - Throws: ``SegmentStoreError`` — `locked` (with the holder's pid) when
    ///   another process has the store open; `io` when the directory is unusable;
    ///   `invalidEncryptionKey`, `wrongEncryptionKey`, `encryptionKeyRequired`,
    ///   `notEncrypted` (see ``Configuration/encryptionKey``).
    public static func open(_ configuration: Configuration) throws -> SegmentStore {
        do {
            // Pending data is private to the app's user: directory 0700, files 0600.
            try FileManager.default.createDirectory(
                atPath: configuration.directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw SegmentStoreError(code: .io, message: "cannot create the store directory: \(error)", path: configuration.directory)
        }
        guard let resolved = realpath(configuration.directory, nil) else {
            throw SegmentStoreError.io("resolving the store directory", path: configuration.directory, errno: errno)
        }
        let canonical = String(cString: resolved)
        free(resolved)
        return try registry.withLock { stores in
            if let existing = stores[canonical] {
                if existing.configuration.encryptionKey != configuration.encryptionKey {
                    let code: SegmentStoreError.Code =
                        !existing.isEncrypted
                        ? .notEncrypted
                        : configuration.encryptionKey == nil ? .encryptionKeyRequired : .wrongEncryptionKey
                    throw SegmentStoreError(
                        code: code,
                        message:
                            "the store is already open in this process with \(existing.isEncrypted ? "another encryption key" : "no encryption key"); open it with the same configuration's key",
                        path: canonical)
                }
                existing.guarded.withLock { $0.state.openCount += 1 }
                return existing
            }
            let store = try SegmentStore(configuration: configuration, canonicalDirectory: canonical)
            // The gauges once at open: what recovery found pending.
            store.guarded.withLock { $0.state.metrics?.report($0.state.counters) }
            stores[canonical] = store
            return store
        }
    }

    /// The counters; pending values describe the store now, the rest count since open.
    public var counters: StoreCounters {
        guarded.withLock { $0.state.counters }
    }

    /// The last error of the background threads (sealing or interval sync), or
    /// `nil` once they succeed again. Sealing is retried every 200 ms; the data
    /// stays in the active segment files meanwhile.
    public var backgroundError: SegmentStoreError? {
        guarded.withLock { $0.state.lastSealError ?? $0.state.lastSyncError }
    }

    /// Seals the active segment now and waits until every segment committed
    /// before the call is sealed (so ``pendingSegments()`` lists it).
    /// - Throws: the sealing error (for example ENOSPC); the data stays in the
    ///   active file and sealing is retried in the background.
    public func flush() throws {
        let held = guarded.lock()
        defer { held.unlock() }
        guard !held.state.closed else { throw SegmentStoreError(code: .closed, message: "the store is closed") }
        while held.state.leaderActive { held.wait(.leader) }
        rotate(held)
        guard let target = held.state.sealQueue.last?.number else { return }
        held.state.lastSealError = nil
        while let first = held.state.sealQueue.first, first.number <= target {
            if let error = held.state.lastSealError { throw error }
            held.wait(.state)
        }
    }

    /// Closes the store: seals the active segment, stops the background
    /// threads and releases the lock. When the directory was opened several
    /// times in this process, only the last `close` closes it.
    public func close() throws {
        var flushError: Error?
        do { try flush() } catch { flushError = error }
        let last: Bool = try Self.registry.withLock { stores in
            try guarded.withLock { held throws(SegmentStoreError) in
                guard !held.state.closed else { throw SegmentStoreError(code: .closed, message: "the store is already closed") }
                held.state.openCount -= 1
                guard held.state.openCount == 0 else { return false }
                held.state.closed = true
                held.state.stopping = true
                held.broadcastAll()
                stores[directory] = nil
                return true
            }
        }
        guard last else { return }
        let active = guarded.withLock { held in
            // Commits queued before `closed` was set finish before the files close.
            while held.state.leaderActive || !held.state.queue.isEmpty { held.wait(.leader) }
            while held.state.threadsRunning > 0 { held.wait(.state) }
            return held.state.active
        }
        // Whatever is still active (a failed flush) stays durable for the next
        // open, without its preallocated tail.
        if let active {
            active.unmap()
            if active.allocated > active.size { _ = fs.ftruncate(active.fd, active.size) }
            _ = fs.fdatasync(active.fd)
        }
        Glibc.close(directoryFD)
        flock(lockFD, LOCK_UN)
        Glibc.close(lockFD)
        if let flushError { throw flushError }
    }

    static func fileName(_ number: UInt64) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}
