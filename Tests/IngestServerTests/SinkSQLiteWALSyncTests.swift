#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport
import Testing
@testable import IngestServer
import IngestTestSupport

/// The fsync of `synchronous=FULL` made outside the SQLite sink's lock
/// (`SQLiteWALSync`): what a sync does with a real WAL file, with none, and
/// when the kernel refuses the fsync. (The sink's writes through it are in
/// `SinkSQLiteTests`; that an answer means "on disk" is proven by
/// `ServerPowerCutTests`, which cuts a real guest's power.)
@Suite("SQLite sink: the WAL's sync")
struct SinkSQLiteWALSyncTests {
    @Test("a sync with no WAL file has nothing to sync; with one, it returns once the fsync is done")
    func syncWithAndWithoutAWALFile() throws {
        let directory = try TemporaryDirectory("walsync")
        let path = directory.path + "/app.sqlite"
        let sync = SQLiteWALSync(databasePath: path)
        try sync.sync(through: sync.noteCommit())  // no -wal file: nothing to do
        _ = FileManager.default.createFile(atPath: path + "-wal", contents: Data(repeating: 7, count: 4096))
        let commit = sync.noteCommit()
        try sync.sync(through: commit)
        try sync.syncAll()
    }

    @Test("a failed fsync fails the sync and every later one, even once the file could be synced")
    func aFailedFsyncIsFinal() throws {
        let directory = try TemporaryDirectory("walsync")
        let path = directory.path + "/app.sqlite"
        // fsync of a FIFO fails (EINVAL): a real refusal by the kernel. The
        // test holds the FIFO open for writing, so opening it to read does not block.
        #expect(mkfifo(path + "-wal", 0o600) == 0)
        let writer = open(path + "-wal", O_RDWR | O_NONBLOCK)
        #expect(writer >= 0)
        defer { close(writer) }
        let sync = SQLiteWALSync(databasePath: path)
        let first = sync.noteCommit()
        let error = #expect(throws: SinkError.self) { try sync.sync(through: first) }
        #expect(error?.code == .sync)
        #expect(error?.message.contains("fsync of \(path)-wal failed") == true)

        // A regular file in its place would sync; the sink still refuses.
        try FileManager.default.removeItem(atPath: path + "-wal")
        _ = FileManager.default.createFile(atPath: path + "-wal", contents: Data(repeating: 7, count: 4096))
        let later = #expect(throws: SinkError.self) { try sync.sync(through: sync.noteCommit()) }
        #expect(later?.code == .sync)
        #expect(throws: SinkError.self) { try sync.syncAll() }
    }
}
