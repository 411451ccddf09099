#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport

/// The fsync of `synchronous=FULL`, made by the writers after they leave the
/// sink's lock instead of by SQLite inside it.
///
/// With the sink configured `FULL`, SQLite runs at `synchronous=NORMAL`: a
/// `COMMIT` appends its frames to the WAL file without syncing it, so the
/// next write can take the lock at once. Before an upload is answered, its
/// writer calls ``sync(through:)`` with its commit's number, which fsyncs
/// the WAL unless a sync that started after that commit has finished
/// already. An answer therefore still means the data is on disk, as with
/// SQLite's own `FULL`: WAL recovery keeps every transaction whose commit
/// frame was synced, and a checkpoint at `NORMAL` syncs the WAL before it
/// copies it into the database and the database before the WAL is reused.
///
/// Answers built from a receipt the sink read (an upload sent again) call
/// ``syncAll()`` first: the receipt's commit may not be synced yet, or may
/// be another process's.
///
/// A failed fsync is final: the pages it could not write may be marked clean
/// by the kernel, so a later fsync's success would prove nothing. Every
/// later sync throws, and uploads answer 500 until the server restarts.
// @unchecked Sendable: all mutable state is in `state`.
final class SQLiteWALSync: @unchecked Sendable {
    /// An open descriptor of the WAL file, closed when the last user lets go.
    private final class WALFile {
        let descriptor: Int32
        let device: UInt64
        let inode: UInt64

        init(descriptor: Int32, device: UInt64, inode: UInt64) {
            self.descriptor = descriptor
            self.device = device
            self.inode = inode
        }

        deinit { close(descriptor) }
    }

    private struct State {
        var file: WALFile?
        /// Commits noted so far, and how many of them are known to be synced.
        var committed: UInt64 = 0
        var synced: UInt64 = 0
        var failure: String?
    }

    /// The database file; its WAL is `<path>-wal`.
    let databasePath: String
    private let walPath: String
    private let state = LockedBox(State())

    init(databasePath: String) {
        self.databasePath = databasePath
        walPath = databasePath + "-wal"
    }

    /// Numbers a commit that has just returned; called under the sink's lock.
    func noteCommit() -> UInt64 {
        state.withLock {
            $0.committed += 1
            return $0.committed
        }
    }

    /// Returns once commit `sequence` (from ``noteCommit()``) and every
    /// commit before it are on disk.
    func sync(through sequence: UInt64) throws(SinkError) {
        // Every commit noted before the fsync starts has written its frames.
        let plan = try state.withLock { (state) throws(SinkError) -> (file: WALFile, covers: UInt64)? in
            if let failure = state.failure { throw SinkError(.sync, failure, location: databasePath) }
            guard state.synced < sequence else { return nil }
            guard let file = try currentFile(&state) else {
                // No WAL file: every commit is in the database file, synced by
                // the checkpoint that emptied the WAL before SQLite removed it.
                state.synced = max(state.synced, state.committed)
                return nil
            }
            return (file, state.committed)
        }
        guard let plan else { return }
        let code = Self.fsyncRetrying(plan.file.descriptor)
        try state.withLock { (state) throws(SinkError) in
            guard code == 0 else {
                let message =
                    "fsync of \(walPath) failed (errno \(code)): committed uploads may not be on disk; "
                    + "the sink refuses to answer for any upload until the server restarts"
                if state.failure == nil { state.failure = message }
                throw SinkError(.sync, message, location: databasePath)
            }
            state.synced = max(state.synced, plan.covers)
        }
    }

    /// Returns once everything committed to the database so far, by any
    /// process, is on disk.
    func syncAll() throws(SinkError) {
        try sync(through: .max)
    }

    /// The open WAL file, reopened if the file at `walPath` is another one
    /// (SQLite removes the WAL when its last connection closes; a new one
    /// is a new file); nil if there is none.
    private func currentFile(_ state: inout State) throws(SinkError) -> WALFile? {
        var current = stat()
        guard stat(walPath, &current) == 0 else {
            if errno == ENOENT { return nil }
            throw SinkError(.sync, "cannot stat \(walPath) (errno \(errno))", location: databasePath)
        }
        if let file = state.file, file.device == UInt64(current.st_dev), file.inode == UInt64(current.st_ino) {
            return file
        }
        let descriptor = open(walPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw SinkError(.sync, "cannot open \(walPath) (errno \(errno))", location: databasePath)
        }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0 else {
            let code = errno
            close(descriptor)
            throw SinkError(.sync, "cannot stat \(walPath) (errno \(code))", location: databasePath)
        }
        // The WAL's name in its directory must survive power loss too.
        let directory = (walPath as NSString).deletingLastPathComponent
        let directoryDescriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            defer { close(directoryDescriptor) }
            let code = Self.fsyncRetrying(directoryDescriptor)
            guard code == 0 else {
                close(descriptor)
                let message = "fsync of the directory of \(walPath) failed (errno \(code))"
                state.failure = message
                throw SinkError(.sync, message, location: databasePath)
            }
        }
        let file = WALFile(descriptor: descriptor, device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino))
        state.file = file
        return file
    }

    /// `fsync(2)`, retried on `EINTR`; 0 or the `errno` it failed with.
    private static func fsyncRetrying(_ descriptor: Int32) -> Int32 {
        while fsync(descriptor) != 0 {
            if errno != EINTR { return errno }
        }
        return 0
    }
}
