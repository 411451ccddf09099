import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport

/// Sealing: a full, old or flushed active segment is rotated into the seal
/// queue; the sealer thread compresses it into a `.seg.gz` file and moves
/// it to the sealed queue; the syncer thread syncs (interval durability)
/// and rotates by age when no commit comes.
extension SegmentStore {
    /// Hands the active segment (if it holds anything) to the sealer.
    func rotate(_ held: StoreState.Held) {
        guard let current = held.state.active else { return }
        held.state.active = nil
        if current.transactionCount > 0 {
            held.state.sealQueue.append(current)
        } else {
            _ = fs.unlink(current.path)
        }
        held.broadcast(.sealer)
    }

    /// The sealer thread: compresses rotated active segments, oldest first.
    func sealLoop() {
        let held = guarded.lock()
        while true {
            while held.state.sealQueue.isEmpty && !held.state.stopping { held.wait(.sealer) }
            guard let segment = held.state.sealQueue.first else { break }
            if held.state.stopping && held.state.lastSealError != nil { break }  // do not retry forever while closing
            let result = held.unlocked { Result { try seal(segment) } }
            switch result {
            case .success(let sealedSegment):
                held.state.sealQueue.removeFirst()
                held.state.sealed.insert(sealedSegment)
                held.state.countersSinceOpen.sealedSegments += 1
                held.state.countersSinceOpen.sealedObjects += sealedSegment.recordCount
                held.state.countersSinceOpen.sealedBytes += sealedSegment.byteCount
                held.state.lastSealError = nil
                held.broadcast(.state)
            case .failure(let error):
                held.state.lastSealError = error as? SegmentStoreError ?? SegmentStoreError(code: .io, message: "\(error)")
                held.broadcast(.state)
                // Retry later (for example after disk space was freed).
                if !held.state.stopping { held.wait(.sealer, until: StoreMonitor.now() + 200_000_000) }
            }
        }
        held.state.threadsRunning -= 1
        held.broadcast(.state)
        held.unlock()
    }

    /// Compresses `segment` into `N.seg.gz.tmp`, syncs it, renames it to
    /// `N.seg.gz`, syncs the directory, and only then deletes the active file.
    func seal(_ segment: ActiveSegment) throws -> PendingSegment {
        // Rotated: no commit reaches it any more. Cut the preallocated zeros
        // off, so that a segment that cannot be sealed now (a full disk) stays
        // on disk at its size (only `size` bytes are read either way).
        segment.unmap()
        if segment.fd >= 0 && segment.allocated > segment.size && fs.ftruncate(segment.fd, segment.size) == 0 {
            segment.allocated = segment.size
        }
        let finalPath = "\(directory)/\(Self.fileName(segment.number)).seg.gz"
        let temporary = finalPath + ".tmp"
        _ = fs.unlink(temporary)
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SegmentStoreError.io("creating a sealed segment", path: temporary, errno: errno) }
        var succeeded = false
        defer {
            if !succeeded { _ = fs.unlink(temporary) }
        }
        do {
            defer { Glibc.close(fd) }
            let deflater = try Gzip.makeCompressor(level: configuration.compressionLevel)
            let file = try FileByteSource(path: segment.path, limit: segment.size)
            // Encrypted: decrypt the active blocks, compress, encrypt the gzip
            // stream in new blocks; plaintext exists only in memory.
            let decrypter = try encryptionKey.map { try DecryptingByteSource(file, key: $0, kind: .stream) }
            let encrypter = try encryptionKey.map { key in
                try EncryptedFileWriter(
                    header: EncryptedFileHeader(kind: .sealed, storeId: storeId, segmentNumber: segment.number, key: key),
                    key: key, blockBytes: 256 << 10
                ) { [fs] bytes in
                    let rc = fs.writeAll(fd, bytes)
                    guard rc == 0 else { throw SegmentStoreError.io("writing a sealed segment", path: temporary, errno: Int32(-rc)) }
                }
            }
            let source: SegmentByteSource = decrypter ?? file
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { chunk.deallocate() }
            var output: [UInt8] = []
            output.reserveCapacity(300 << 10)
            var total = 0
            func drain(_ force: Bool) throws {
                guard !output.isEmpty, force || output.count >= 256 << 10 else { return }
                if let encrypter {
                    try encrypter.write(output)
                } else {
                    let rc = output.withUnsafeBytes { fs.writeAll(fd, $0) }
                    guard rc == 0 else { throw SegmentStoreError.io("writing a sealed segment", path: temporary, errno: Int32(-rc)) }
                }
                output.removeAll(keepingCapacity: true)
            }
            while true {
                let n = try source.read(into: chunk)
                if n == 0 { break }
                total += n
                try deflater.compress(UnsafeRawBufferPointer(rebasing: chunk[..<n]), appendingTo: &output)
                try drain(false)
            }
            let fileBytes = decrypter?.fileOffset ?? total
            guard fileBytes == segment.size else {
                throw SegmentStoreError(
                    code: .corruptSegment, message: "the active segment holds \(fileBytes) bytes, expected \(segment.size)",
                    path: segment.path)
            }
            var end: [UInt8] = []
            SegmentFormat.appendEnd(
                recordCount: segment.recordCount, transactionCount: segment.transactionCount, version: segment.formatVersion, to: &end)
            try deflater.compress(end, appendingTo: &output)
            try deflater.finish(appendingTo: &output)
            try drain(true)
            try encrypter?.finish()
            let rc = fs.fsync(fd)
            guard rc == 0 else { throw SegmentStoreError.io("syncing a sealed segment", path: temporary, errno: -rc) }
        }
        var rc = fs.rename(temporary, finalPath)
        guard rc == 0 else { throw SegmentStoreError.io("renaming a sealed segment", path: finalPath, errno: -rc) }
        succeeded = true
        rc = fs.fsync(directoryFD)
        guard rc == 0 else {
            // The sealed file may not be durable yet: keep the active file too
            // (recovery prefers a verified sealed file and deletes the active one).
            throw SegmentStoreError.io("syncing the store directory", path: directory, errno: -rc)
        }
        // Its cursors outlive the segment (which is deleted once acknowledged).
        try persistCursors(of: segment)
        _ = fs.unlink(segment.path)
        var info = stat()
        stat(finalPath, &info)
        return PendingSegment(
            number: segment.number, path: finalPath, byteCount: Int(info.st_size),
            recordCount: segment.recordCount, transactionCount: segment.transactionCount)
    }

    /// The syncer thread: background `fdatasync` (interval durability) and
    /// sealing by age when no commit comes.
    func syncLoop() {
        let ageNanos = UInt64(max(configuration.maxSegmentAgeMilliseconds, 1)) * 1_000_000
        var tickNanos = min(ageNanos / 4, 100_000_000)
        if case .interval(let milliseconds) = configuration.durability {
            tickNanos = min(tickNanos, UInt64(max(milliseconds, 1)) * 1_000_000)
        }
        tickNanos = max(tickNanos, 1_000_000)
        let held = guarded.lock()
        var nextTick = StoreMonitor.now() + tickNanos
        while !held.state.stopping {
            held.wait(.state, until: nextTick)
            if held.state.stopping { break }
            let now = StoreMonitor.now()
            guard now >= nextTick else { continue }
            nextTick = now + tickNanos
            if case .interval = configuration.durability {
                // The active segment, and rotated ones still waiting for the sealer,
                // so the interval bounds what power loss can take.
                let dirty = ([held.state.active].compactMap { $0 } + held.state.sealQueue).filter { $0.dirty && $0.fd >= 0 }
                for segment in dirty {
                    segment.dirty = false
                    let syncDirectory = segment.needsDirectorySync
                    segment.needsDirectorySync = false
                    let rc = held.unlocked {
                        var rc = fs.fdatasync(segment.fd)
                        if rc == 0 && syncDirectory { rc = fs.fsync(directoryFD) }
                        return rc
                    }
                    if rc == 0 {
                        held.state.lastSyncError = nil
                    } else {
                        held.state.lastSyncError = .io("syncing the active segment in the background", path: segment.path, errno: -rc)
                        segment.needsDirectorySync = segment.needsDirectorySync || syncDirectory
                    }
                }
            }
            if !held.state.leaderActive, let segment = held.state.active, let first = segment.firstCommitAt,
                StoreMonitor.now() &- first >= ageNanos
            {
                rotate(held)
            }
        }
        held.state.threadsRunning -= 1
        held.broadcast(.state)
        held.unlock()
    }
}
