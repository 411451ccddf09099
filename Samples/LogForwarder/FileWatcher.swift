#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Wakes the forwarder when a watched directory changes (inotify): a file in
/// it written to, created, renamed, deleted. Directories are watched, not
/// files, so one watch covers every file in one directory, also the ones
/// that do not exist yet and those rotated in. Without inotify (`--poll`,
/// `inotify_init1` failing, the watch limit `fs.inotify.max_user_watches`
/// reached) the forwarder polls: `wait` then just sleeps.
final class FileWatcher {
    /// What `wait` saw.
    struct Wake {
        /// Something happened in a watched directory.
        var changed = false
        /// A file was created, renamed or deleted, or an event was lost
        /// (queue overflow): the patterns should be scanned now.
        var rescan = false
        /// The files written to (their paths).
        var modified: Set<String> = []
    }

    /// The inotify descriptor; -1 while polling.
    private(set) var fd: Int32 = -1
    /// Watched directories, by path and by watch descriptor.
    private var watches: [String: Int32] = [:]
    private var paths: [Int32: String] = [:]
    /// Why the forwarder polls (nil: inotify works).
    private(set) var pollReason: String?
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    private static let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB)
    private static let rescanMask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_Q_OVERFLOW | IN_IGNORED)

    init(poll: Bool) {
        if poll {
            pollReason = "--poll"
            return
        }
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { pollReason = "inotify_init1 failed: \(String(cString: strerror(errno)))" }
    }

    var isWatching: Bool { fd >= 0 }

    /// Watches exactly `directories` (adds the new ones, drops the others).
    /// Reaching the watch limit (or any other failure) falls back to polling.
    func watch(_ directories: Set<String>) {
        guard fd >= 0 else { return }
        for (path, wd) in watches where !directories.contains(path) {
            inotify_rm_watch(fd, wd)
            watches[path] = nil
            paths[wd] = nil
        }
        for path in directories.sorted() where watches[path] == nil {
            let wd =
                watches.count >= (Self.testWatchLimit ?? Int.max)
                ? {
                    errno = ENOSPC; return -1
                }() : inotify_add_watch(fd, path, Self.mask | UInt32(IN_ONLYDIR))
            if wd >= 0 {
                watches[path] = wd
                paths[wd] = path
                continue
            }
            let code = errno
            if code == ENOENT || code == ENOTDIR || code == EACCES { continue }  // gone, or not readable: the scan copes
            fallBack(
                code == ENOSPC
                    ? "the inotify watch limit is reached (fs.inotify.max_user_watches)"
                    : "inotify_add_watch(\(path)) failed: \(String(cString: strerror(code)))")
            return
        }
    }

    /// `INGEST_FORWARD_TEST_MAX_WATCHES=N`: adding a watch beyond N fails
    /// as at the kernel's limit (ENOSPC), a test seam. Unset: no limit but the kernel's.
    private static let testWatchLimit: Int? =
        ProcessInfo.processInfo.environment["INGEST_FORWARD_TEST_MAX_WATCHES"].flatMap { Int($0) }

    private func fallBack(_ reason: String) {
        close(fd)
        fd = -1
        watches.removeAll()
        paths.removeAll()
        pollReason = reason
        FileHandle.standardError.write(Data("ingest-forward: \(reason); polling the files instead\n".utf8))
    }

    /// Waits at most `timeout` seconds for a change in a watched directory
    /// (sleeps that long when polling) and drains the events.
    func wait(_ timeout: Double) -> Wake {
        guard fd >= 0 else {
            usleep(UInt32(max(0, min(timeout, 10)) * 1_000_000))
            return Wake()
        }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(max(0, min(timeout, 10)) * 1000))
        guard ready > 0 else { return Wake() }
        var wake = Wake()
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var offset = 0
            buffer.withUnsafeBytes { raw in
                while offset + MemoryLayout<inotify_event>.size <= n {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    wake.changed = true
                    if event.mask & Self.rescanMask != 0 { wake.rescan = true }
                    if event.mask & UInt32(IN_MODIFY) != 0, event.len > 0, let directory = paths[event.wd] {
                        let start = offset + MemoryLayout<inotify_event>.size
                        let name = raw[start..<(start + Int(event.len))].prefix { $0 != 0 }
                        let file = String(decoding: name, as: UTF8.self)
                        wake.modified.insert(directory == "." ? file : directory == "/" ? "/" + file : directory + "/" + file)
                    }
                    if event.mask & UInt32(IN_IGNORED) != 0, let path = paths[event.wd] {
                        paths[event.wd] = nil  // the directory is gone
                        watches[path] = nil
                    }
                    offset += MemoryLayout<inotify_event>.size + Int(event.len)
                }
            }
        }
        return wake
    }

    deinit {
        if fd >= 0 { close(fd) }
    }
}
