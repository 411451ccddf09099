import CoreMetrics
import Foundation
import IngestCore
import IngestSupport

extension SegmentStore {
    /// What a committed transaction can lose on power loss (a `kill -9` of the
    /// process never loses a committed transaction at any level: the commit has
    /// reached the operating system before `commit` returns).
    public enum Durability: Sendable, Hashable {
        /// `fdatasync` before `commit` returns: nothing committed is lost on power
        /// loss. Concurrent commits share one sync (group commit).
        case full
        /// A background `fdatasync` every `milliseconds`: power loss can lose the
        /// transactions committed in the last interval (plus the sync's duration).
        /// Docs/Reliability.md ("Power loss") has what cutting a virtual
        /// machine's power lost at each level.
        case interval(milliseconds: Int)
        /// No explicit sync of the active segment: power loss can lose what the
        /// kernel had not yet written back (typically up to ~30 s on Linux).
        /// Sealed segments are still synced before the active data is removed,
        /// so in practice the loss is bounded by sealing: the active segment's
        /// ``Configuration/maxSegmentAgeMilliseconds`` plus the seal's own time
        /// (Docs/Reliability.md, "Power loss").
        case none
    }

    /// What a commit does when pending bytes would exceed ``Configuration/maxPendingBytes``.
    public enum BudgetPolicy: Sendable, Hashable {
        /// Wait up to `milliseconds` for uploads to free space, then fail with
        /// ``SegmentStoreError/Code/storageFull``.
        case block(milliseconds: Int)
        /// Delete the oldest sealed segments until the transaction fits; what was
        /// dropped is counted (``StoreCounters/droppedObjects``) and logged to
        /// `quarantine/dropped.jsonl`. Fails with `storageFull` when only unsealed
        /// data remains.
        case dropOldest
        /// Fail the commit at once with ``SegmentStoreError/Code/storageFull``.
        case fail
    }

    /// How a store behaves; every property has a documented default.
    ///
    /// ```swift
    /// var configuration = SegmentStore.Configuration(directory: "/var/lib/app/ingest")
    /// configuration.durability = .full
    /// let store = try SegmentStore.open(configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The store's directory (created if missing). One process at a time.
        public var directory: String
        /// Default `.interval(milliseconds: 100)`.
        public var durability: Durability = .interval(milliseconds: 100)
        /// The active segment is sealed once it holds this many (uncompressed)
        /// bytes; a soft limit (one batch of transactions may go over). Default 4 MiB.
        public var maxSegmentBytes: Int = 4 << 20
        /// The active segment is sealed this long after its first commit, bounding
        /// upload latency. Default 1,000 ms.
        public var maxSegmentAgeMilliseconds: Int = 1_000
        /// How far ahead of its content the active segment file is extended
        /// (with `posix_fallocate`, so a full disk fails a commit with ENOSPC)
        /// and memory-mapped: a commit is then a copy into the shared mapping,
        /// which is in the kernel's page cache at once (`kill -9` cannot lose
        /// it), instead of a `write(2)` system call. The extension is cut to
        /// what a commit needs when the disk cannot hold a whole step, and never
        /// reaches much past ``maxSegmentBytes``. `0` appends with one
        /// `write(2)` per commit group instead. Encrypted stores, and file
        /// systems where a store into a preallocated mapping could still need
        /// space (copy-on-write ones such as btrfs), always use `write(2)`.
        /// Default 1 MiB.
        public var preallocationBytes: Int = 1 << 20
        /// gzip level for sealed segments. Default ``Gzip/defaultLevel`` (1):
        /// the project's own deflate encoder (`FastDeflater`); zlib compresses
        /// at the other levels (0...9).
        public var compressionLevel: Int = Gzip.defaultLevel
        /// The most bytes on disk (sealed segments plus active data) awaiting
        /// acknowledgement. Default 1 GiB.
        public var maxPendingBytes: Int = 1 << 30
        /// Default `.block(milliseconds: 1_000)`.
        public var budgetPolicy: BudgetPolicy = .block(milliseconds: 1_000)
        /// The schema (one encoded BSON document) written into each new segment's
        /// header. Default the empty document.
        public var schema: [UInt8] = SegmentFormat.emptyDocument
        /// The system calls used to change files. Default ``PosixFileSystem``.
        public var fileSystem: any StoreFileSystem = PosixFileSystem()
        /// A 256-bit key (exactly 32 bytes) that encrypts the store's pending
        /// data at rest with AES-256-GCM: the active segment, sealed segments
        /// and the quarantine's object files are never plaintext on disk.
        /// Uploads are decrypted in memory; the server never sees the key.
        /// Default `nil` (no encryption).
        ///
        /// The app keeps the key (for example in the platform's secret store)
        /// and passes the same one at every open. Opening with another key
        /// fails with ``SegmentStoreError/Code/wrongEncryptionKey``, without a
        /// key with `encryptionKeyRequired`; a key on a store holding
        /// unencrypted segments fails with `notEncrypted`. A key of another
        /// size fails with `invalidEncryptionKey` (64-byte Realm keys are
        /// refused, never truncated). See Docs/Security.md for what it protects.
        ///
        /// ```swift
        /// var configuration = SegmentStore.Configuration(directory: path)
        /// configuration.encryptionKey = keyFromKeychain   // 32 bytes
        /// ```
        public var encryptionKey: Data? = nil
        /// The swift-metrics backend the store's counters and gauges are
        /// reported to (names in Docs/ClientMetrics.md). Default `nil`: the
        /// one bootstrapped with `MetricsSystem.bootstrap`, and nothing at
        /// all is reported while none is.
        public var metricsFactory: (any MetricsFactory)? = nil

        /// A configuration for `directory` with the defaults above.
        public init(directory: String) {
            self.directory = directory
        }
    }
}
