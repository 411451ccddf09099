#if canImport(Glibc)
import Glibc
#endif

/// The system calls through which the segment store changes files: a seam so
/// tests can inject a full disk (`ENOSPC`), short writes and failing syncs,
/// and record every change to build the states a power cut can leave
/// (`PowerLossModelTests`). Every write, `pwrite`, sync, truncation,
/// preallocation, rename, unlink and memory mapping of the store's files
/// goes through it; stores into a mapping do not (they are memory accesses),
/// and reach the disk at the next `fdatasync` or `fsync` of the file (on
/// Linux these write back the file's dirty mapped pages too, so the store
/// needs no `msync`).
///
/// Results follow the kernel's: a byte count (or 0) on success, a negative
/// `errno` on failure. ``PosixFileSystem`` is the real implementation.
///
/// ```swift
/// var configuration = SegmentStore.Configuration(directory: path)
/// configuration.fileSystem = MyFaultInjectingFileSystem()
/// ```
public protocol StoreFileSystem: Sendable {
    /// Writes some of `bytes` at the descriptor's offset; returns the count
    /// written (possibly short) or `-errno`.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int
    /// `fdatasync(2)`; returns 0 or `-errno`.
    func fdatasync(_ fd: Int32) -> Int32
    /// `fsync(2)` (also used on directories); returns 0 or `-errno`.
    func fsync(_ fd: Int32) -> Int32
    /// `ftruncate(2)`; returns 0 or `-errno`.
    func ftruncate(_ fd: Int32, _ length: Int) -> Int32
    /// `rename(2)`; returns 0 or `-errno`.
    func rename(_ from: String, _ to: String) -> Int32
    /// Reserves disk space for bytes `offset..<offset + length` of the file,
    /// extending it with zeros (`posix_fallocate(3)`); returns 0 or `-errno`
    /// (`ENOSPC` on a full disk). The store extends its active segment this way
    /// before copying commits into the file's memory mapping, so a full disk
    /// fails a commit here and never a store into the mapping. A default
    /// implementation calls `posix_fallocate`.
    func allocate(_ fd: Int32, offset: Int, length: Int) -> Int32
    /// Writes some of `bytes` at file offset `offset` (`pwrite(2)`); returns
    /// the count written or `-errno`. A default implementation calls `pwrite`.
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int
    /// `unlink(2)`; returns 0 or `-errno`. A default implementation calls `unlink`.
    func unlink(_ path: String) -> Int32
    /// Maps `length` bytes of the file shared and writable (`mmap(2)` with
    /// `MAP_SHARED`); returns the address, or `nil` with `errno` set. A default
    /// implementation calls `mmap`.
    func map(_ fd: Int32, length: Int) -> UnsafeMutableRawPointer?
}

extension StoreFileSystem {
    /// `posix_fallocate(3)`, retried on `EINTR`; returns 0 or `-errno`.
    public func allocate(_ fd: Int32, offset: Int, length: Int) -> Int32 {
        PosixFileSystem.posixAllocate(fd, offset: offset, length: length)
    }

    /// `pwrite(2)`, retried on `EINTR`; returns the count written or `-errno`.
    public func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        PosixFileSystem.posixPwrite(fd, bytes, at: offset)
    }

    /// `unlink(2)`; returns 0 or `-errno`.
    public func unlink(_ path: String) -> Int32 {
        Glibc.unlink(path) == 0 ? 0 : -errno
    }

    /// `mmap(2)`, shared and writable; `nil` with `errno` set on failure.
    public func map(_ fd: Int32, length: Int) -> UnsafeMutableRawPointer? {
        PosixFileSystem.posixMap(fd, length: length)
    }
}

/// The real file system (POSIX calls, retried on `EINTR`).
public struct PosixFileSystem: StoreFileSystem {
    /// Creates the real file system.
    public init() {}

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        while true {
            let n = Glibc.write(fd, bytes.baseAddress, bytes.count)
            if n >= 0 { return n }
            if errno != EINTR { return -Int(errno) }
        }
    }

    public func fdatasync(_ fd: Int32) -> Int32 {
        Glibc.fdatasync(fd) == 0 ? 0 : -errno
    }

    public func fsync(_ fd: Int32) -> Int32 {
        Glibc.fsync(fd) == 0 ? 0 : -errno
    }

    public func ftruncate(_ fd: Int32, _ length: Int) -> Int32 {
        Glibc.ftruncate(fd, off_t(length)) == 0 ? 0 : -errno
    }

    public func rename(_ from: String, _ to: String) -> Int32 {
        Glibc.rename(from, to) == 0 ? 0 : -errno
    }

    public func allocate(_ fd: Int32, offset: Int, length: Int) -> Int32 {
        Self.posixAllocate(fd, offset: offset, length: length)
    }

    // pwrite, unlink and map: the protocol's default implementations.

    static func posixPwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        while true {
            let n = Glibc.pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
            if n >= 0 { return n }
            if errno != EINTR { return -Int(errno) }
        }
    }

    static func posixMap(_ fd: Int32, length: Int) -> UnsafeMutableRawPointer? {
        guard let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
            address != UnsafeMutableRawPointer(bitPattern: -1)
        else { return nil }
        return address
    }

    static func posixAllocate(_ fd: Int32, offset: Int, length: Int) -> Int32 {
        while true {
            // posix_fallocate returns the error number itself (errno is not set).
            let rc = posix_fallocate(fd, off_t(offset), off_t(length))
            if rc != EINTR { return -rc }
        }
    }
}

extension StoreFileSystem {
    /// Writes all of `bytes`, continuing after short writes.
    /// - Returns: 0, or `-errno` of the failing write (some bytes may be written).
    func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        var zeroWrites = 0
        while offset < bytes.count {
            let n = write(fd, UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            if n < 0 { return n }
            if n == 0 {
                // A write that makes no progress repeatedly is a full disk.
                zeroWrites += 1
                if zeroWrites >= 3 { return -Int(ENOSPC) }
            }
            offset += n
        }
        return 0
    }

    /// `pwrite` of all of `bytes` at `offset`, continuing after short writes;
    /// 0 or `-errno`.
    func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, UnsafeRawBufferPointer(rebasing: bytes[done...]), at: offset + done)
            if n < 0 { return n }
            if n == 0 { return -Int(EIO) }
            done += n
        }
        return 0
    }
}
