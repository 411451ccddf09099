import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif
#if os(Linux)
import CLinux
#endif

/// The active segment's file: created with its header, extended with
/// `allocate` and memory-mapped where the file system writes preallocated
/// blocks in place, numbered from the reserved block in `SEQUENCE`.
extension SegmentStore {
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
        guarded.withLock { $0.state.active = segment }
        return segment
    }

    /// The next segment number; numbers are reserved in blocks in `SEQUENCE`
    /// so they are never reused, even after every segment was acknowledged.
    func allocateSegmentNumber() throws -> UInt64 {
        let number = guarded.withLock { held -> UInt64? in
            guard held.state.nextSegmentNumber < held.state.reservedSegmentNumber else { return nil }
            defer { held.state.nextSegmentNumber += 1 }
            return held.state.nextSegmentNumber
        }
        if let number { return number }
        let next = guarded.withLock { $0.state.nextSegmentNumber }
        try writeSequenceFile(reserveUpTo: next + 1024)
        return guarded.withLock { held in
            held.state.reservedSegmentNumber = next + 1024
            held.state.nextSegmentNumber = next + 1
            return next
        }
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
        let length = max(
            segment.allocated, 2 * segment.mappedLength,
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
        let type = dataingest_filesystem_type(directory)
        let inPlace: Set<Int> = [
            0xEF53,  // ext2, ext3, ext4
            0x5846_5342,  // XFS
            0x0102_1994,  // tmpfs
            0x794C_7630,  // overlayfs (container roots; the upper layer is usually ext4 or XFS)
        ]
        return type >= 0 && inPlace.contains(type)
        #else
        return false
        #endif
    }
}
