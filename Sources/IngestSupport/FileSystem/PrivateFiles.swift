#if canImport(Glibc)
import Glibc
#endif

/// Files and directories readable by their owner only: directories 0700,
/// files 0600, whatever the process's umask. The server keeps ingested data,
/// signing secrets and tokens in them (Docs/Server.md, "File modes").
///
/// ```swift
/// try PrivateFiles.makeDirectory("/var/lib/ingest/sinks")
/// try PrivateFiles.createFile("/var/lib/ingest/sinks/weather.sqlite")   // before SQLite opens it
/// try PrivateFiles.write(Array("dev-abc12345\n".utf8), to: "/var/lib/ingest/development-app-id")
/// ```
package enum PrivateFiles {
    /// A failed file operation: what, where, and the `errno`.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var operation: String
        package var path: String
        package var errno: Int32
        package var description: String { "cannot \(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    /// Creates `path` and its missing parents with mode 0700. Directories that
    /// exist already keep their mode.
    package static func makeDirectory(_ path: String) throws(Failure) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, 0o700) == 0 {
                _ = chmod(prefix, 0o700)  // in case the umask took bits from 0700
            } else if errno != EEXIST {
                throw Failure(operation: "create the directory", path: prefix, errno: errno)
            }
            prefix += "/"
        }
    }

    /// Creates an empty file with mode 0600 unless `path` exists. SQLite gives
    /// a database's `-wal` and `-shm` files the database file's mode, so a
    /// database created this way stays private with them.
    package static func createFile(_ path: String) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST { return }
            throw Failure(operation: "create", path: path, errno: errno)
        }
        _ = fchmod(fd, 0o600)
        close(fd)
    }

    /// Replaces `path` atomically with `bytes`: a temporary file of mode 0600
    /// in the same directory, written, synced and renamed over it.
    package static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(operation: "create", path: temporary, errno: errno) }
        _ = fchmod(fd, 0o600)
        var offset = 0
        var failure: Int32 = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            offset += n
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw Failure(operation: "write", path: path, errno: failure)
        }
    }
}
