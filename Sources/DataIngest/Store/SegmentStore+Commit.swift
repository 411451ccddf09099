import Foundation
import IngestCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The commit pipeline: a committer either copies its transaction into the
/// active segment's mapping itself (no leader active, room in the mapping)
/// or queues it; the first queued committer becomes the leader and writes
/// the whole queue as one group (one `write`, one copy, or `pwrite`s),
/// without the monitor; full durability syncs the group before anyone's
/// `commit` returns.
extension SegmentStore {
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
        var writer = TransactionWriter(buffer: takeSpareBuffer())
        try body(&writer)
        guard writer.hasContent else { return nil }
        return try submit(bytes: writer.buffer, recordCount: writer.recordCount, cursors: writer.cursors, keepsBuffer: true)
    }

    /// The largest buffer kept for the next transaction.
    static let spareBufferLimit = 64 << 10

    /// An empty buffer for a transaction: the last committed one's if it is
    /// kept (a small commit then allocates and frees nothing, for taking the
    /// monitor once more; about 160 instructions fewer per commit,
    /// Benchmarks/README.md), else a new one.
    func takeSpareBuffer() -> [UInt8] {
        var buffer: [UInt8] = []
        guarded.withLock { held in swap(&buffer, &held.state.spareTransactionBuffer) }
        if buffer.capacity == 0 {
            buffer.reserveCapacity(512)
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
        return buffer
    }

    /// Commits a transaction collected beforehand (see ``TransactionWriter/init(reservingCapacity:)``).
    /// A transaction with no records and no cursor writes nothing and returns `nil`.
    @discardableResult
    public func commit(_ transaction: TransactionWriter) throws -> CommitReceipt? {
        guard transaction.hasContent else { return nil }
        return try submit(bytes: transaction.buffer, recordCount: transaction.recordCount, cursors: transaction.cursors)
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

    // MARK: - Commit path

    /// `keepsBuffer`: `bytes` is the buffer of a ``commit(_:)`` closure's
    /// transaction, kept for the next one (a caller's own
    /// ``TransactionWriter`` is not: it may append to it again).
    func submit(
        bytes: [UInt8], recordCount: Int, cursors: [(name: String, value: [UInt8])] = [], keepsBuffer: Bool = false
    ) throws -> CommitReceipt {
        let held = guarded.lock()
        defer { held.unlock() }
        guard !held.state.closed else { throw SegmentStoreError(code: .closed, message: "the store is closed; open it again to commit") }
        do {
            try reserveBudget(bytes.count + SegmentFormat.commitFrameSize, held)
        } catch {
            held.state.countersSinceOpen.failedCommits += 1
            throw error
        }
        if !held.state.leaderActive && held.state.queue.isEmpty,
            let receipt = copyIntoMapping(bytes, recordCount: recordCount, held)
        {
            if !cursors.isEmpty { recordCursors(cursors, receipt, held.state.active!, held) }
            if keepsBuffer && bytes.capacity <= Self.spareBufferLimit { held.state.spareTransactionBuffer = bytes }
            return receipt
        }
        let pending = PendingCommit(bytes: bytes, recordCount: recordCount, cursors: cursors)
        held.state.queue.append(pending)
        held.state.queuedBytes += bytes.count + SegmentFormat.commitFrameSize
        while !pending.done {
            if held.state.leaderActive {
                held.wait(.leader)
                continue
            }
            // Become the leader: write every waiting transaction with one write.
            // While `leaderActive` is set, only the leader changes `active`.
            held.state.leaderActive = true
            let batch = held.state.queue
            held.state.queue = []
            let current = held.state.active
            let outcome = held.unlocked { writeBatch(batch, current: current) }
            finishBatch(batch, outcome, held)
            held.state.leaderActive = false
            held.broadcast(.leader)
        }
        if let error = pending.error { throw error }
        if keepsBuffer && bytes.capacity <= Self.spareBufferLimit { held.state.spareTransactionBuffer = bytes }
        return pending.receipt!
    }

    /// The common case, without a system call, a lock hand-over or an
    /// allocation: no leader is active and the transaction fits into the active
    /// segment's preallocated space, so the committer copies it into the
    /// mapping itself while it holds the monitor. Returns `nil` when the
    /// leader's path is needed (no mapped segment yet, an extension, a rotation
    /// by size, full durability's sync).
    @inline(__always)
    func copyIntoMapping(_ bytes: [UInt8], recordCount: Int, _ held: StoreState.Held) -> CommitReceipt? {
        guard !fullDurability, let segment = held.state.active, let mapping = segment.mapping else { return nil }
        let start = segment.size
        let end = start + bytes.count + SegmentFormat.commitFrameSize
        let index = segment.transactionCount
        // Large transactions go to the leader, which writes them with pwrite.
        guard end <= segment.allocated, index == 0 || end <= configuration.maxSegmentBytes,
            bytes.count < Self.directWriteThreshold
        else { return nil }
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
        held.state.countersSinceOpen.recordCommits(transactions: 1, objects: recordCount, bytes: bytes.count)
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
    static func copyGroup(
        to destination: UnsafeMutableRawPointer, firstByte: UInt8,
        _ writeRest: (UnsafeMutableRawPointer) -> Void
    ) {
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

    /// Writes `batch` to the active segment `current` (rotated first when it
    /// is full or old) or a new one: the leader, without the monitor.
    func writeBatch(_ batch: [PendingCommit], current: ActiveSegment?) -> BatchOutcome {
        var outcome = BatchOutcome()
        let batchBytes = batch.reduce(0) { $0 + $1.bytes.count + SegmentFormat.commitFrameSize }
        let now = StoreMonitor.now()
        let maxAge = UInt64(max(configuration.maxSegmentAgeMilliseconds, 0)) * 1_000_000
        var current = current
        if let full = current, full.transactionCount > 0,
            full.size + batchBytes > configuration.maxSegmentBytes
                || (full.firstCommitAt.map { now &- $0 >= maxAge } ?? false)
        {
            guarded.withLock { rotate($0) }
            current = nil
        }
        let segment: ActiveSegment
        if let current {
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
        let buffers = leaderBuffers
        buffers.write.removeAll(keepingCapacity: true)
        var rc = 0
        var written = 0
        for (i, pending) in batch.enumerated() {
            if pending.bytes.count >= Self.directWriteThreshold {
                if !buffers.write.isEmpty {
                    rc = buffers.write.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
                    if rc < 0 { break }
                    written += buffers.write.count
                    buffers.write.removeAll(keepingCapacity: true)
                }
                rc = pending.bytes.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
                if rc < 0 { break }
                written += pending.bytes.count
            } else {
                buffers.write.append(contentsOf: pending.bytes)
            }
            SegmentFormat.appendCommit(
                transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                recordCount: pending.recordCount, to: &buffers.write)
        }
        if rc == 0 {
            rc = buffers.write.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
            if rc == 0 { written += buffers.write.count }
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
    /// mapping, which fault once per page (Docs/SegmentFormat.md, "The
    /// client's segment store", has the figures), and the page cache is the
    /// same. The group's first byte is written last, as in ``copyGroup``.
    func pwriteBatch(_ batch: [PendingCommit], batchBytes: Int, segment: ActiveSegment, outcome: BatchOutcome) -> BatchOutcome {
        let buffers = leaderBuffers
        var offset = segment.size
        var rc = 0
        for (i, pending) in batch.enumerated() {
            let skip = offset == segment.size ? 1 : 0  // the group's first byte is written last
            rc = pending.bytes.withUnsafeBytes {
                fs.pwriteAll(segment.fd, UnsafeRawBufferPointer(rebasing: $0[skip...]), at: offset + skip)
            }
            if rc != 0 { break }
            offset += pending.bytes.count
            buffers.write.removeAll(keepingCapacity: true)
            SegmentFormat.appendCommit(
                transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                recordCount: pending.recordCount, to: &buffers.write)
            rc = buffers.write.withUnsafeBytes { fs.pwriteAll(segment.fd, $0, at: offset) }
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
                if rc == 0 { guarded.withLock { _ in segment.needsDirectorySync = false } }
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
        leaderBuffers.trim()
        return outcome
    }

    /// The encrypted form of ``writeBatch(_:)``: the batch's frames become one
    /// AES-256-GCM block (several for a batch over 8 MiB, split only between
    /// transactions, so every block ends with a commit frame) and one write.
    func writeEncryptedBatch(_ batch: [PendingCommit], segment: ActiveSegment, cipher: SegmentCipher, outcome: BatchOutcome) -> BatchOutcome
    {
        var outcome = outcome
        let buffers = leaderBuffers
        buffers.write.removeAll(keepingCapacity: true)
        buffers.cipher.removeAll(keepingCapacity: true)
        do {
            for (i, pending) in batch.enumerated() {
                buffers.write.append(contentsOf: pending.bytes)
                SegmentFormat.appendCommit(
                    transactionNumber: segment.number << 32 | UInt64(outcome.firstIndex + i),
                    recordCount: pending.recordCount, to: &buffers.write)
                if buffers.write.count >= Self.encryptedBlockTarget || i == batch.count - 1 {
                    try buffers.write.withUnsafeBytes {
                        try cipher.appendBlock($0, fileOffset: segment.size + buffers.cipher.count, to: &buffers.cipher)
                    }
                    buffers.write.removeAll(keepingCapacity: true)
                }
            }
        } catch {
            outcome.error = SegmentStoreError(code: .io, message: "encrypting a transaction failed: \(error)", path: segment.path)
            return outcome
        }
        let rc = buffers.cipher.withUnsafeBytes { fs.writeAll(segment.fd, $0) }
        return finishWrite(rc: rc, written: buffers.cipher.count, segment: segment, outcome: outcome)
    }

    /// Records a written batch (its receipts, the segment's counts) or its error.
    func finishBatch(_ batch: [PendingCommit], _ outcome: BatchOutcome, _ held: StoreState.Held) {
        held.state.queuedBytes -= batch.reduce(0) { $0 + $1.bytes.count + SegmentFormat.commitFrameSize }
        guard let segment = outcome.segment, outcome.error == nil else {
            let error = outcome.error ?? SegmentStoreError(code: .io, message: "no active segment")
            for pending in batch {
                pending.error = error
                pending.done = true
            }
            held.state.countersSinceOpen.failedCommits += batch.count
            if outcome.rotateAfter { rotate(held) }
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
            if !pending.cursors.isEmpty { recordCursors(pending.cursors, pending.receipt!, segment, held) }
        }
        segment.recordCount += objects
        segment.transactionCount += batch.count
        held.state.countersSinceOpen.recordCommits(transactions: batch.count, objects: objects, bytes: bytes)
    }

    /// A committed transaction's cursors become the latest values (the
    /// store's and its segment's, which the sealer saves in `CURSORS`).
    func recordCursors(
        _ cursors: [(name: String, value: [UInt8])], _ receipt: CommitReceipt, _ segment: ActiveSegment,
        _ held: StoreState.Held
    ) {
        for (name, value) in cursors {
            held.state.cursors.set(name, value, transaction: receipt.transactionNumber)
            segment.cursors.set(name, value, transaction: receipt.transactionNumber)
        }
    }

    /// Applies the budget policy until `bytes` more fit.
    func reserveBudget(_ bytes: Int, _ held: StoreState.Held) throws {
        var deadline: UInt64?
        while held.state.pendingBytes + bytes > configuration.maxPendingBytes {
            let full = SegmentStoreError(
                code: .storageFull,
                message: "the store holds \(held.state.pendingBytes) pending bytes, the budget is \(configuration.maxPendingBytes); "
                    + "upload and acknowledge segments, or raise maxPendingBytes", path: directory)
            switch configuration.budgetPolicy {
            case .fail:
                throw full
            case .dropOldest:
                guard !held.state.sealed.isEmpty else { throw full }
                dropOldest(held)
            case .block(let milliseconds):
                let now = StoreMonitor.now()
                let end = deadline ?? now + UInt64(max(milliseconds, 0)) * 1_000_000
                deadline = end
                if now >= end { throw full }
                held.wait(.state, until: end)
                if held.state.closed { throw SegmentStoreError(code: .closed, message: "the store was closed while waiting for space") }
            }
        }
    }

}

/// The commit leader's scratch buffers, reused from group to group. Only
/// the leader (the committer that set ``StoreState/leaderActive``) touches
/// them, so they need no lock.
// @unchecked Sendable: used by one leader at a time (see above).
final class LeaderBuffers: @unchecked Sendable {
    /// Frames of a group gathered for one write.
    var write: [UInt8] = []
    /// The encrypted blocks of a group (encrypted stores only).
    var cipher: [UInt8] = []

    /// Lets go of a huge group's buffers.
    func trim() {
        if write.capacity > 8 << 20 { write = [] }
        if cipher.capacity > 8 << 20 { cipher = [] }
    }
}
