#if canImport(Glibc)
import Glibc
#endif

/// The system calls through which the segment store changes files: a seam so
/// tests can inject a full disk (`ENOSPC`), short writes and failing syncs.
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
}

extension StoreFileSystem {
    /// `posix_fallocate(3)`, retried on `EINTR`; returns 0 or `-errno`.
    public func allocate(_ fd: Int32, offset: Int, length: Int) -> Int32 {
        PosixFileSystem.posixAllocate(fd, offset: offset, length: length)
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
}
