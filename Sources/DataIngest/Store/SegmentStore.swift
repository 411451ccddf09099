import Foundation
import IngestCore
import Synchronization
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
// @unchecked Sendable: all mutable state is guarded by `monitor`, except what
// only the current commit leader touches (`writeBuffer`, appending to the
// active file or its mapping), which the `leaderActive` flag makes exclusive;
// a committer copies into the mapping itself only while it holds the monitor
// and no leader is active.
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
    let monitor = StoreMonitor()
    /// Whether active segments are preallocated and memory-mapped (see
    /// ``Configuration/preallocationBytes``); decided at open.
    let mapsActiveSegments: Bool
    /// ``Configuration/preallocationBytes`` rounded up to whole pages.
    let preallocationStep: Int
    let fullDurability: Bool
    let lockFD: Int32
    let directoryFD: Int32
    var quarantineDirectory: String { directory + "/quarantine" }

    // MARK: State guarded by `monitor`
    var openCount = 1
    var closed = false
    var stopping = false
    var threadsRunning = 0
    var leaderActive = false
    var queue: [PendingCommit] = []
    var queuedBytes = 0
    var active: ActiveSegment?
    var sealQueue: [ActiveSegment] = []
    var sealed: [PendingSegment] = []
    var sealedBytesTotal = 0
    var countersSinceOpen = StoreCounters()
    var lastSealError: SegmentStoreError?
    var lastSyncError: SegmentStoreError?
    var nextSegmentNumber: UInt64 = 1
    var reservedSegmentNumber: UInt64 = 1

    // MARK: Owned by the commit leader
    var writeBuffer: [UInt8] = []
    /// The encrypted blocks of a batch (encrypted stores only).
    var cipherBuffer: [UInt8] = []

    static let registry = LockedBox<[String: SegmentStore]>([:])
    /// Transactions at least this large are written from their own buffer.
    static let directWriteThreshold = 16 << 10

    /// Plaintext gathered into one encrypted block before a new one starts.
    static let encryptedBlockTarget = 8 << 20

    init(configuration: Configuration, directory: String, storeId: SegmentStoreID, encryptionKey: SegmentEncryptionKey?,
         lockFD: Int32, directoryFD: Int32) {
        self.configuration = configuration
        self.directory = directory
        self.storeId = storeId
        self.encryptionKey = encryptionKey
        self.fs = configuration.fileSystem
        self.lockFD = lockFD
        self.directoryFD = directoryFD
        self.fullDurability = configuration.durability == .full
        self.preallocationStep = Self.roundUpToPage(max(configuration.preallocationBytes, 0))
        self.mapsActiveSegments = configuration.preallocationBytes > 0 && encryptionKey == nil
            && Self.preallocationIsReliable(directory: directory)
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
                    let code: SegmentStoreError.Code = !existing.isEncrypted ? .notEncrypted
                        : configuration.encryptionKey == nil ? .encryptionKeyRequired : .wrongEncryptionKey
                    throw SegmentStoreError(
                        code: code,
                        message: "the store is already open in this process with \(existing.isEncrypted ? "another encryption key" : "no encryption key"); open it with the same configuration's key",
                        path: canonical)
                }
                existing.monitor.withLock { existing.openCount += 1 }
                return existing
            }
            let store = try SegmentStore(configuration: configuration, canonicalDirectory: canonical)
            stores[canonical] = store
            return store
        }
    }

    /// Commits one write transaction: `body` appends its records; when `commit`
    /// returns, the records are in the active segment (and synced, with
    /// ``Durability/full``). All records or none are committed. A transaction
    /// with no records writes nothing and returns `nil`.
    ///
    /// ```swift
    /// let receipt = try store.commit { tx in
    ///     try tx.append(collection: "WeatherSensor", document: bson)
    /// }
    /// ```
    /// - Throws: errors from `body` (nothing is committed); ``SegmentStoreError``
    ///   `storageFull` (budget policy), `io` (for example ENOSPC: the store is
    ///   unchanged), `closed`.
    @discardableResult
    public func commit(_ body: (inout TransactionWriter) throws -> Void) throws -> CommitReceipt? {
        var writer = TransactionWriter(reservingCapacity: 512)
        try body(&writer)
        guard writer.recordCount > 0 else { return nil }
        return try submit(bytes: writer.buffer, recordCount: writer.recordCount)
    }

    /// Commits a transaction collected beforehand (see ``TransactionWriter/init(reservingCapacity:)``).
    /// A transaction with no records writes nothing and returns `nil`.
    @discardableResult
    public func commit(_ transaction: TransactionWriter) throws -> CommitReceipt? {
        guard transaction.recordCount > 0 else { return nil }
        return try submit(bytes: transaction.buffer, recordCount: transaction.recordCount)
    }

    /// Commits one transaction made of `records` (collection name and one encoded
    /// BSON document each).
    ///
    /// ```swift
    /// try store.commit(records: [("WeatherSensor", bson1), ("WeatherSensor", bson2)])
    /// ```
    @discardableResult
    public func commit(records: [(collection: String, document: [UInt8])]) throws -> CommitReceipt? {
        try commit { tx in
            for record in records { try tx.append(collection: record.collection, document: record.document) }
        }
    }

    /// The counters; pending values describe the store now, the rest count since open.
    public var counters: StoreCounters {
        monitor.withLock {
            var c = countersSinceOpen
            c.pendingSegments = sealed.count + sealQueue.count + ((active?.transactionCount ?? 0) > 0 ? 1 : 0)
            c.pendingObjects = sealed.reduce(0) { $0 + $1.recordCount }
                + sealQueue.reduce(0) { $0 + $1.recordCount } + (active?.recordCount ?? 0)
            c.pendingBytes = pendingBytesLocked() - queuedBytes
            return c
        }
    }

    /// The last error of the background threads (sealing or interval sync), or
    /// `nil` once they succeed again. Sealing is retried every 200 ms; the data
    /// stays in the active segment files meanwhile.
    public var backgroundError: SegmentStoreError? {
        monitor.withLock { lastSealError ?? lastSyncError }
    }

    /// Seals the active segment now and waits until every segment committed
    /// before the call is sealed (so ``pendingSegments()`` lists it).
    /// - Throws: the sealing error (for example ENOSPC); the data stays in the
    ///   active file and sealing is retried in the background.
    public func flush() throws {
        monitor.lock()
        defer { monitor.unlock() }
        guard !closed else { throw SegmentStoreError(code: .closed, message: "the store is closed") }
        while leaderActive { monitor.wait(.leader) }
        rotateLocked()
        guard let target = sealQueue.last?.number else { return }
        lastSealError = nil
        while let first = sealQueue.first, first.number <= target {
            if let error = lastSealError { throw error }
            monitor.wait(.state)
        }
    }

    /// Closes the store: seals the active segment, stops the background
    /// threads and releases the lock. When the directory was opened several
    /// times in this process, only the last `close` closes it.
    public func close() throws {
        var flushError: Error?
        do { try flush() } catch { flushError = error }
        let last: Bool = try Self.registry.withLock { stores in
            try monitor.withLock {
                guard !closed else { throw SegmentStoreError(code: .closed, message: "the store is already closed") }
                openCount -= 1
                guard openCount == 0 else { return false }
                closed = true
                stopping = true
                monitor.broadcastAll()
                stores[directory] = nil
                return true
            }
        }
        guard last else { return }
        monitor.withLock {
            // Commits queued before `closed` was set finish before the files close.
            while leaderActive || !queue.isEmpty { monitor.wait(.leader) }
            while threadsRunning > 0 { monitor.wait(.state) }
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

    // MARK: - Commit path

    func submit(bytes: [UInt8], recordCount: Int) throws -> CommitReceipt {
        monitor.lock()
        defer { monitor.unlock() }
        guard !closed else { throw SegmentStoreError(code: .closed, message: "the store is closed; open it again to commit") }
        do {
            try reserveBudgetLocked(bytes.count + SegmentFormat.commitFrameSize)
        } catch {
            countersSinceOpen.failedCommits += 1
            throw error
        }
        if !leaderActive && queue.isEmpty, let receipt = copyIntoMappingLocked(bytes, recordCount: recordCount) {
            return receipt
        }
        let pending = PendingCommit(bytes: bytes, recordCount: recordCount)
        queue.append(pending)
        queuedBytes += bytes.count + SegmentFormat.commitFrameSize
        while !pending.done {
            if leaderActive {
                monitor.wait(.leader)
                continue
            }
            // Become the leader: write every waiting transaction with one write.
            leaderActive = true
            let batch = queue
            queue = []
            monitor.unlock()
            let outcome = writeBatch(batch)
            monitor.lock()
            finishBatchLocked(batch, outcome)
            leaderActive = false
            monitor.broadcast(.leader)
        }
        if let error = pending.error { throw error }
        return pending.receipt!
    }

    /// The common case, without a system call, a lock hand-over or an
    /// allocation: no leader is active and the transaction fits into the active
    /// segment's preallocated space, so the committer copies it into the
    /// mapping itself while it holds the monitor. Returns `nil` when the
    /// leader's path is needed (no mapped segment yet, an extension, a rotation
    /// by size, full durability's sync).
    @inline(__always)
    func copyIntoMappingLocked(_ bytes: [UInt8], recordCount: Int) -> CommitReceipt? {
        guard !fullDurability, let segment = active, let mapping = segment.mapping else { return nil }
        let start = segment.size
        let end = start + bytes.count + SegmentFormat.commitFrameSize
        let index = segment.transactionCount
        // Large transactions go to the leader, which writes them with pwrite.
        guard end <= segment.allocated, index == 0 || end <= configuration.maxSegmentBytes,
              bytes.count < Self.directWriteThreshold else { return nil }
        let transactionNumber = segment.number << 32 | UInt64(index)
        bytes.withUnsafeBytes { source in
            Self.copyGroup(to: mapping + start, firstByte: source[0]) { destination in
                (destination + 1).copyMemory(from: source.baseAddress! + 1, byteCount: source.count - 1)
                SegmentFormat.storeCommit(transactionNumber: transactionNumber, recordCount: recordCount, at: destination + source.count)
            }
        }
        segment.size = end
        segment.recordCount += recordCount
        segment.transactionCount = index + 1
        segment.dirty = true
        if segment.firstCommitAt == nil { segment.firstCommitAt = StoreMonitor.now() }
        countersSinceOpen.recordCommits(transactions: 1, objects: recordCount, bytes: bytes.count)
        return CommitReceipt(transactionNumber: transactionNumber, segmentNumber: segment.number, recordCount: recordCount)
    }

    /// Copies a group of transactions into mapped memory (still zero there)
    /// so that `kill -9` at any instant leaves either all of it or a stream
    /// that ends before it: `writeRest` fills in everything but the group's
    /// first byte, which is stored last. That byte is the type of the first
    /// record frame, never 0; until it is stored, a reader finds a 0 where the
    /// next frame's type belongs, which ends an active stream
    /// (Docs/SegmentFormat.md), whatever part of the rest was copied.
    @inline(__always)
    static func copyGroup(to destination: UnsafeMutableRawPointer, firstByte: UInt8,
                          _ writeRest: (UnsafeMutableRawPointer) -> Void) {
        writeRest(destination)
        // Keeps the compiler from moving the publishing store before the copy.
        atomicMemoryFence(ordering: .releasing)
        destination.storeBytes(of: firstByte, as: UInt8.self)
    }

    struct BatchOutcome {
        var segment: ActiveSegment?
        var firstIndex = 0
        var written = 0
        var error: SegmentStoreError?
        var rotateAfter = false
    }

    /// Writes `batch` to the active segment (the leader, without the monitor).
    func writeBatch(_ batch: [PendingCommit]) -> BatchOutcome {
        var outcome = BatchOutcome()
        let batchBytes = batch.reduce(0) { $0 + $1.bytes.count + SegmentFormat.commitFrameSize }
        let now = StoreMonitor.now()
        let maxAge = UInt64(max(configuration.maxSegmentAgeMilliseconds, 0)) * 1_000_000
        if let current = active, current.transactionCount > 0,
           current.size + batchBytes > configuration.maxSegmentBytes
            || (current.firstCommitAt.map { now &- $0 >= maxAge } ?? false) {
            monitor.withLock { rotateLocked() }
        }
        let segment: ActiveSegment
        if let current = active {
            segment = current
        } else {
            do {
                segment = try createActiveSegment(firstBatchBytes: batchBytes)
            } catch let error as SegmentStoreError {
                outcome.error = error
                return outcome
            } catch {
                outcome.error = SegmentStoreError(code: .io, message: "\(error)")
                return outcome
            }
        }
        outcome.segment = segment
        outcome.firstIndex = segment.transactionCount
        if let cipher = segment.cipher {
            return writeEncryptedBatch(batch, segment: segment, cipher: cipher, outcome: outcome)
        }
        if segment.mapping != nil {
            return copyBatchIntoMapping(batch, batchBytes: batchBytes, segment: segment, outcome: outcome)
        }
        // Small transactions are gathered into one buffer and one write; a large
        // one is written from its own buffer (a copy would cost more than the
        // extra system call). Atomicity of a single write is not needed: recovery
        // cuts any torn tail back to the last commit frame.
        writeBuffer.removeAll(keepingCapacity: true)
        var rc = 0
        var written = 0
        for (i, pending) in batch.enumerated() {
            if pending.bytes.count >= Self.directWriteThreshold {
                if !writeBuffer.isEmpty {
                    rc = writeBuffer.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
                    if rc < 0 { break }
                    written += writeBuffer.count
                    writeBuffer.removeAll(keepingCapacity: true)
                }
                rc = pending.bytes.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
                if rc < 0 { break }
                written += pending.bytes.count
            } else {
                writeBuffer.append(contentsOf: pending.bytes)
            }
            SegmentFormat.appendCommit(
                transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                recordCount: pending.recordCount, to: &writeBuffer)
        }
        if rc == 0 {
            rc = writeBuffer.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
            if rc == 0 { written += writeBuffer.count }
        }
        return finishWrite(rc: rc, written: written, segment: segment, outcome: outcome)
    }

    /// The mapped form of ``writeBatch(_:)``: extends the file and its mapping
    /// when the batch does not fit (a full disk fails the batch here, with
    /// nothing written), then copies every transaction and its commit frame
    /// as one group.
    func copyBatchIntoMapping(_ batch: [PendingCommit], batchBytes: Int, segment: ActiveSegment, outcome: BatchOutcome) -> BatchOutcome {
        var outcome = outcome
        do {
            try reserveMapped(segment, through: segment.size + batchBytes)
        } catch let error as SegmentStoreError {
            outcome.error = error
            return outcome
        } catch {
            outcome.error = SegmentStoreError(code: .io, message: "\(error)", path: segment.path)
            return outcome
        }
        if batchBytes >= Self.directWriteThreshold {
            return pwriteBatch(batch, batchBytes: batchBytes, segment: segment, outcome: outcome)
        }
        let destination = segment.mapping! + segment.size
        let firstIndex = outcome.firstIndex
        Self.copyGroup(to: destination, firstByte: batch[0].bytes[0]) { destination in
            var offset = 0
            for (i, pending) in batch.enumerated() {
                pending.bytes.withUnsafeBytes { source in
                    let skip = offset == 0 ? 1 : 0  // the group's first byte is stored last
                    (destination + offset + skip).copyMemory(from: source.baseAddress! + skip, byteCount: source.count - skip)
                }
                offset += pending.bytes.count
                SegmentFormat.storeCommit(
                    transactionNumber: segment.number << 32 | UInt64(firstIndex + i),
                    recordCount: pending.recordCount, at: destination + offset)
                offset += SegmentFormat.commitFrameSize
            }
        }
        return finishWrite(rc: 0, written: batchBytes, segment: segment, outcome: outcome)
    }

    /// A large group (16 KiB or more) in a mapped segment: `pwrite` into the
    /// preallocated space costs less per page than first stores into the
    /// mapping (measured: ~1.4 µs more per 4 KiB page through the mapping,
    /// which made 1,000-object transactions ~30 % slower), and the page cache
    /// is the same. The group's first byte is written last, as in ``copyGroup``.
    func pwriteBatch(_ batch: [PendingCommit], batchBytes: Int, segment: ActiveSegment, outcome: BatchOutcome) -> BatchOutcome {
        var offset = segment.size
        var rc = 0
        for (i, pending) in batch.enumerated() {
            let skip = offset == segment.size ? 1 : 0  // the group's first byte is written last
            rc = pending.bytes.withUnsafeBytes { fs.pwriteAll(segment.fd, UnsafeRawBufferPointer(rebasing: $0[skip...]), at: offset + skip) }
            if rc != 0 { break }
            offset += pending.bytes.count
            writeBuffer.removeAll(keepingCapacity: true)
            SegmentFormat.appendCommit(
                transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                recordCount: pending.recordCount, to: &writeBuffer)
            rc = writeBuffer.withUnsafeBytes { fs.pwriteAll(segment.fd, $0, at: offset) }
            if rc != 0 { break }
            offset += SegmentFormat.commitFrameSize
        }
        if rc == 0 {
            var first = batch[0].bytes[0]
            rc = withUnsafeBytes(of: &first) { fs.pwriteAll(segment.fd, $0, at: segment.size) }
        }
        // A failure zeroes (unpublishes) the group through the mapping.
        return finishWrite(rc: rc, written: batchBytes, segment: segment, outcome: outcome)
    }

    /// Makes the mapped `segment` hold bytes up to `end`: extends the file with
    /// `allocate` (by ``Configuration/preallocationBytes``, or only as far as
    /// needed when the disk cannot hold that) and maps more when needed. The
    /// leader's, or the creator's, only.
    func reserveMapped(_ segment: ActiveSegment, through end: Int) throws {
        if end > segment.allocated {
            let needed = Self.roundUpToPage(end)
            let step = max(preallocationStep, Self.pageSize)
            var target = min((end + step - 1) / step * step, max(needed, Self.roundUpToPage(configuration.maxSegmentBytes)))
            target = max(target, needed)
            var rc = fs.allocate(segment.fd, offset: segment.allocated, length: target - segment.allocated)
            if rc == -ENOSPC && target > needed {
                // The disk cannot hold a whole step: reserve what this group needs.
                target = needed
                rc = fs.allocate(segment.fd, offset: segment.allocated, length: target - segment.allocated)
            }
            guard rc == 0 else { throw SegmentStoreError.io("extending the active segment", path: segment.path, errno: -rc) }
            segment.allocated = target
        }
        guard segment.allocated > segment.mappedLength else { return }
        // Map ahead (address space only; pages past `allocated` are never touched):
        // a segment normally never needs a second mapping.
        let length = max(segment.allocated, 2 * segment.mappedLength,
                         Self.roundUpToPage(configuration.maxSegmentBytes) + max(preallocationStep, Self.pageSize))
        guard let address = fs.map(segment.fd, length: length) else {
            throw SegmentStoreError.io("mapping the active segment into memory", path: segment.path, errno: errno)
        }
        segment.unmap()
        segment.mapping = address
        segment.mappedLength = length
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    static func roundUpToPage(_ bytes: Int) -> Int { (bytes + pageSize - 1) / pageSize * pageSize }

    /// Whether a store into a shared mapping of a file extended with
    /// `posix_fallocate` can never need disk space (and so never fail with
    /// `SIGBUS` on a full disk): true on file systems that write preallocated
    /// blocks in place. Copy-on-write ones (btrfs, ZFS, bcachefs) allocate on
    /// every write, so they, and any file system not known here, use `write(2)`.
    static func preallocationIsReliable(directory: String) -> Bool {
        #if os(Linux)
        // statfs(2) is not in the Glibc module: look it up. `f_type` (a C
        // `long`) is the first field of `struct statfs` (120 bytes on x86_64).
        typealias StatFS = @convention(c) (UnsafePointer<CChar>, UnsafeMutableRawPointer) -> Int32
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "statfs") else { return false }
        let call = unsafeBitCast(symbol, to: StatFS.self)
        let info = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 16)
        defer { info.deallocate() }
        guard call(directory, info) == 0 else { return false }
        let type = info.load(as: Int.self)
        let inPlace: Set<Int> = [
            0xEF53,  // ext2, ext3, ext4
            0x5846_5342,  // XFS
            0x0102_1994,  // tmpfs
            0x794C_7630,  // overlayfs (container roots; the upper layer is usually ext4 or XFS)
        ]
        return inPlace.contains(type)
        #else
        return false
        #endif
    }

    /// Syncs (full durability) after a batch's write, or cuts a failed one off.
    func finishWrite(rc writeResult: Int, written: Int, segment: ActiveSegment, outcome: BatchOutcome) -> BatchOutcome {
        var outcome = outcome
        var rc = writeResult
        var what = "appending to the active segment"
        if rc == 0, configuration.durability == .full {
            rc = Int(fs.fdatasync(segment.fd))
            what = "syncing the active segment"
            if rc == 0 && segment.needsDirectorySync {
                rc = Int(fs.fsync(directoryFD))
                what = "syncing the store directory"
                if rc == 0 { monitor.withLock { segment.needsDirectorySync = false } }
            }
        }
        if rc < 0, let mapping = segment.mapping {
            // Unpublish the group (its first byte first) and zero the rest, so
            // the stream ends at the last commit again and no stale frame can
            // follow a later, shorter group copied over it.
            (mapping + segment.size).storeBytes(of: 0, as: UInt8.self)
            atomicMemoryFence(ordering: .releasing)
            (mapping + segment.size).initializeMemory(as: UInt8.self, repeating: 0, count: written)
            outcome.error = .io(what, path: segment.path, errno: Int32(-rc))
            return outcome
        }
        if rc < 0 {
            // Cut the partial write off so the file ends at the last commit.
            if fs.ftruncate(segment.fd, segment.size) != 0 {
                // The file has junk after `size`: stop appending to it; the sealer
                // reads only `size` bytes and recovery cuts the rest.
                outcome.rotateAfter = true
            }
            outcome.error = .io(what, path: segment.path, errno: Int32(-rc))
            return outcome
        }
        outcome.written = written
        if writeBuffer.capacity > 8 << 20 { writeBuffer = [] }  // do not keep a huge batch's buffer
        if cipherBuffer.capacity > 8 << 20 { cipherBuffer = [] }
        return outcome
    }

    /// The encrypted form of ``writeBatch(_:)``: the batch's frames become one
    /// AES-256-GCM block (several for a batch over 8 MiB, split only between
    /// transactions, so every block ends with a commit frame) and one write.
    func writeEncryptedBatch(_ batch: [PendingCommit], segment: ActiveSegment, cipher: SegmentCipher, outcome: BatchOutcome) -> BatchOutcome {
        var outcome = outcome
        writeBuffer.removeAll(keepingCapacity: true)
        cipherBuffer.removeAll(keepingCapacity: true)
        do {
            for (i, pending) in batch.enumerated() {
                writeBuffer.append(contentsOf: pending.bytes)
                SegmentFormat.appendCommit(
                    transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                    recordCount: pending.recordCount, to: &writeBuffer)
                if writeBuffer.count >= Self.encryptedBlockTarget || i == batch.count - 1 {
                    try writeBuffer.withUnsafeBytes {
                        try cipher.appendBlock($0, fileOffset: segment.size + cipherBuffer.count, to: &cipherBuffer)
                    }
                    writeBuffer.removeAll(keepingCapacity: true)
                }
            }
        } catch {
            outcome.error = SegmentStoreError(code: .io, message: "encrypting a transaction failed: \(error)", path: segment.path)
            return outcome
        }
        let rc = cipherBuffer.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
        return finishWrite(rc: rc, written: cipherBuffer.count, segment: segment, outcome: outcome)
    }

    func finishBatchLocked(_ batch: [PendingCommit], _ outcome: BatchOutcome) {
        queuedBytes -= batch.reduce(0) { $0 + $1.bytes.count + SegmentFormat.commitFrameSize }
        guard let segment = outcome.segment, outcome.error == nil else {
            let error = outcome.error ?? SegmentStoreError(code: .io, message: "no active segment")
            for pending in batch {
                pending.error = error
                pending.done = true
            }
            countersSinceOpen.failedCommits += batch.count
            if outcome.rotateAfter { rotateLocked() }
            return
        }
        segment.size += outcome.written
        segment.dirty = true
        if segment.firstCommitAt == nil { segment.firstCommitAt = StoreMonitor.now() }
        var objects = 0
        var bytes = 0
        for (i, pending) in batch.enumerated() {
            pending.receipt = CommitReceipt(
                transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                segmentNumber: segment.number, recordCount: pending.recordCount)
            pending.done = true
            objects += pending.recordCount
            bytes += pending.bytes.count
        }
        segment.recordCount += objects
        segment.transactionCount += batch.count
        countersSinceOpen.recordCommits(transactions: batch.count, objects: objects, bytes: bytes)
    }

    /// Hands the active segment (if it holds anything) to the sealer.
    func rotateLocked() {
        guard let current = active else { return }
        active = nil
        if current.transactionCount > 0 {
            sealQueue.append(current)
        } else {
            _ = fs.unlink(current.path)
        }
        monitor.broadcast(.sealer)
    }

    /// Creates the next active segment file and writes its header (the
    /// leader); a mapped one is extended and mapped for the first batch.
    func createActiveSegment(firstBatchBytes: Int) throws -> ActiveSegment {
        let number = try allocateSegmentNumber()
        let path = "\(directory)/\(Self.fileName(number)).active"
        // Mapped: read access too (a shared writable mapping needs it) and no
        // O_APPEND (Linux's pwrite appends on such a descriptor, whatever the offset).
        let flags = mapsActiveSegments ? O_RDWR : O_WRONLY | O_APPEND
        let fd = Glibc.open(path, flags | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SegmentStoreError.io("creating the active segment", path: path, errno: errno) }
        var header: [UInt8] = []
        let millis = Int64(Date().timeIntervalSince1970 * 1000)
        SegmentFormat.appendStart(
            SegmentHeader(storeId: storeId, segmentNumber: number, createdAtMillis: millis, schema: configuration.schema),
            to: &header)
        var cipher: SegmentCipher?
        if let encryptionKey {
            // The envelope header, then the segment header as the first block.
            do {
                let envelope = try EncryptedFileHeader(kind: .stream, storeId: storeId, segmentNumber: number, key: encryptionKey)
                let newCipher = try SegmentCipher(header: envelope, key: encryptionKey, encrypting: true)
                var bytes = envelope.bytes
                try header.withUnsafeBytes { try newCipher.appendBlock($0, fileOffset: bytes.count, to: &bytes) }
                header = bytes
                cipher = newCipher
            } catch {
                Glibc.close(fd)
                _ = fs.unlink(path)
                throw SegmentStoreError(code: .io, message: "encrypting the active segment's header failed: \(error)", path: path)
            }
        }
        let rc = header.withUnsafeBytes { fs.writeAll(fd, $0) }
        guard rc == 0 else {
            Glibc.close(fd)
            _ = fs.unlink(path)
            throw SegmentStoreError.io("writing the active segment's header", path: path, errno: Int32(-rc))
        }
        let segment = ActiveSegment(number: number, path: path, fd: fd, size: header.count, cipher: cipher)
        if mapsActiveSegments {
            segment.allocated = header.count
            do {
                try reserveMapped(segment, through: header.count + firstBatchBytes)
            } catch {
                _ = fs.unlink(path)  // the segment's deinit closes the descriptor
                throw error
            }
        }
        monitor.withLock { active = segment }
        return segment
    }

    /// The next segment number; numbers are reserved in blocks in `SEQUENCE`
    /// so they are never reused, even after every segment was acknowledged.
    func allocateSegmentNumber() throws -> UInt64 {
        let number = monitor.withLock { () -> UInt64? in
            guard nextSegmentNumber < reservedSegmentNumber else { return nil }
            defer { nextSegmentNumber += 1 }
            return nextSegmentNumber
        }
        if let number { return number }
        let next = monitor.withLock { nextSegmentNumber }
        try writeSequenceFile(reserveUpTo: next + 1024)
        return monitor.withLock {
            reservedSegmentNumber = next + 1024
            nextSegmentNumber = next + 1
            return next
        }
    }

    func pendingBytesLocked() -> Int {
        sealedBytesTotal + sealQueue.reduce(0) { $0 + $1.size } + (active?.size ?? 0) + queuedBytes
    }

    /// Applies the budget policy until `bytes` more fit (the caller holds the monitor).
    func reserveBudgetLocked(_ bytes: Int) throws {
        var deadline: UInt64?
        while pendingBytesLocked() + bytes > configuration.maxPendingBytes {
            let full = SegmentStoreError(
                code: .storageFull,
                message: "the store holds \(pendingBytesLocked()) pending bytes, the budget is \(configuration.maxPendingBytes); "
                    + "upload and acknowledge segments, or raise maxPendingBytes", path: directory)
            switch configuration.budgetPolicy {
            case .fail:
                throw full
            case .dropOldest:
                guard !sealed.isEmpty else { throw full }
                dropOldestLocked()
            case .block(let milliseconds):
                let now = StoreMonitor.now()
                let end = deadline ?? now + UInt64(max(milliseconds, 0)) * 1_000_000
                deadline = end
                if now >= end { throw full }
                monitor.wait(.state, until: end)
                if closed { throw SegmentStoreError(code: .closed, message: "the store was closed while waiting for space") }
            }
        }
    }

    static func fileName(_ number: UInt64) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}
