import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

@Suite struct StoreFaultTests {
    static func open(_ dir: TemporaryDirectory, _ fs: FaultyFileSystem, _ change: (inout SegmentStore.Configuration) -> Void = { _ in })
        throws -> SegmentStore
    {
        var configuration = SegmentStore.Configuration(directory: dir.path("store"))
        configuration.fileSystem = fs
        configuration.maxSegmentAgeMilliseconds = 60_000
        change(&configuration)
        return try SegmentStore.open(configuration)
    }

    /// Appending with write(2) (`preallocationBytes = 0`): ENOSPC after part
    /// of a transaction was written.
    @Test func diskFullMidWriteFailsTheCommitAndKeepsTheStoreConsistent() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        var store = try Self.open(dir, fs) { $0.preallocationBytes = 0 }
        var committed: [Int64] = []
        for id in 0..<10 {
            try TxDocument.commit(store, id: Int64(id))
            committed.append(Int64(id))
        }
        // Room for part of the next transaction only: a short write, then ENOSPC.
        for room in [0, 1, 17, 60] {
            fs.faults.withLock { $0.bytesUntilFull = room }
            #expect { try TxDocument.commit(store, id: 1_000 + Int64(room)) } throws: {
                let error = $0 as? SegmentStoreError
                return error?.code == .io && error?.errno == ENOSPC
            }
        }
        fs.faults.withLock { $0.bytesUntilFull = nil }
        for id in 10..<20 {
            try TxDocument.commit(store, id: Int64(id))
            committed.append(Int64(id))
        }
        #expect(store.counters.failedCommits == 4)
        try store.close()
        store = try Self.open(dir, fs) { $0.preallocationBytes = 0 }
        #expect(try StoreCheck.transactions(in: store) == committed)
        try store.close()
    }

    /// A preallocated, memory-mapped active segment: a full disk fails the
    /// commit that needs the file extended, with ENOSPC from `commit` (never a
    /// SIGBUS on a store into the mapping); a whole preallocation step that
    /// does not fit shrinks to what the commit needs first. Nothing of a failed
    /// commit is recovered; the store continues when space returns.
    @Test func diskFullAtPreallocationFailsTheCommitThatNeedsSpace() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        let step = 64 << 10
        var store = try Self.open(dir, fs) { $0.preallocationBytes = step }
        guard store.mapsActiveSegments else {
            try store.close()
            print("diskFullAtPreallocationFailsTheCommitThatNeedsSpace: this file system gets write(2) appends; skipped")
            return
        }
        var committed: [Int64] = []
        for id in 0..<10 {
            try TxDocument.commit(store, id: Int64(id))
            committed.append(Int64(id))
        }
        // Room for less than a step: the next extension takes a page at a time.
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        fs.faults.withLock { $0.bytesUntilFull = 2 * page }
        var id: Int64 = 10
        var failure: SegmentStoreError?
        while failure == nil && id < 10_000 {
            do {
                try TxDocument.commit(store, id: id)
                committed.append(id)
            } catch let error as SegmentStoreError {
                failure = error
            }
            id += 1
        }
        #expect(failure?.code == .io && failure?.errno == ENOSPC, "\(String(describing: failure))")
        // The step's worth of content fitted, plus the two pages, and no more.
        let content = store.counters.pendingBytes
        #expect(content > step + 2 * page - 200 && content <= step + 2 * page, "\(content) bytes")
        #expect(fs.faults.withLock { $0.bytesUntilFull } == 0)
        #expect { try TxDocument.commit(store, id: 20_000) } throws: { ($0 as? SegmentStoreError)?.errno == ENOSPC }
        #expect(store.counters.failedCommits == 2)
        fs.faults.withLock { $0.bytesUntilFull = nil }
        for id in 30_000..<30_010 {
            try TxDocument.commit(store, id: Int64(id))
            committed.append(Int64(id))
        }
        try store.close()
        store = try Self.open(dir, fs) { $0.preallocationBytes = step }
        #expect(try StoreCheck.transactions(in: store) == committed)
        try store.close()
    }

    /// A store closed while its active segment cannot be sealed (a full disk)
    /// keeps it, cut back to its content, for the next open.
    @Test func closingWithAnUnsealableActiveSegmentTrimsItsPreallocation() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        var store = try Self.open(dir, fs) { $0.preallocationBytes = 64 << 10 }
        for id in 0..<20 { try TxDocument.commit(store, id: Int64(id)) }
        let size = store.counters.pendingBytes
        fs.faults.withLock { $0.bytesUntilFull = 0 }
        #expect { try store.close() } throws: { ($0 as? SegmentStoreError)?.errno == ENOSPC }
        fs.faults.withLock { $0.bytesUntilFull = nil }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("store"))
        let activeName = try #require(names.first { $0.hasSuffix(".active") })
        var info = stat()
        #expect(stat(dir.path("store/" + activeName), &info) == 0 && Int(info.st_size) == size)
        store = try Self.open(dir, fs)
        #expect(try StoreCheck.transactions(in: store) == (0..<20).map(Int64.init))
        #expect(store.quarantineReports().isEmpty)
        try store.close()
    }

    /// Large transactions are written from their own buffers: a full disk in
    /// the middle of one still leaves only whole transactions.
    @Test func diskFullInsideALargeTransaction() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        var store = try Self.open(dir, fs) { $0.preallocationBytes = 0 }
        func bigCommit(_ id: Int64) throws {
            try store.commit { tx in
                for k in 0..<1_000 { try tx.append(collection: "Tx", document: TxDocument.make(id: id, k: Int32(k), n: 1_000)) }
            }
        }
        try bigCommit(1)
        try TxDocument.commit(store, id: 2)
        fs.faults.withLock { $0.bytesUntilFull = 20_000 }  // fails inside the next 45 KB transaction
        #expect(throws: SegmentStoreError.self) { try bigCommit(3) }
        fs.faults.withLock { $0.bytesUntilFull = nil }
        try bigCommit(4)
        try store.close()
        store = try Self.open(dir, fs)
        try store.flush()
        var seen: [Int64: Int] = [:]
        for segment in store.pendingSegments() {
            let reader = try store.reader(for: segment)
            while let event = try reader.next() {
                if case .record(let record) = event, let parsed = TxDocument.parse(record.document) { seen[parsed.id, default: 0] += 1 }
            }
        }
        #expect(seen == [1: 1_000, 2: 3, 4: 1_000])
        try store.close()
    }

    @Test func shortWritesAreCompleted() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        fs.faults.withLock { $0.maxWriteSize = 7 }
        let store = try Self.open(dir, fs) { $0.preallocationBytes = 0 }
        for id in 0..<50 { try TxDocument.commit(store, id: Int64(id)) }
        #expect(try StoreCheck.transactions(in: store) == (0..<50).map(Int64.init))
        #expect(fs.faults.withLock { $0.writes } > 100)
        try store.close()
    }

    @Test func failedTruncateAfterAFailedWriteStillRecovers() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        var store = try Self.open(dir, fs) { $0.preallocationBytes = 0 }
        for id in 0..<5 { try TxDocument.commit(store, id: Int64(id)) }
        fs.faults.withLock {
            $0.bytesUntilFull = 25
            $0.failTruncate = true
        }
        #expect(throws: SegmentStoreError.self) { try TxDocument.commit(store, id: 99) }
        fs.faults.withLock {
            $0.bytesUntilFull = nil
            $0.failTruncate = false
        }
        for id in 5..<10 { try TxDocument.commit(store, id: Int64(id)) }
        try store.close()
        store = try Self.open(dir, fs)
        #expect(try StoreCheck.transactions(in: store) == (0..<10).map(Int64.init))
        try store.close()
    }

    @Test func fullDurabilitySyncFailureIsReportedAndNotCommitted() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        let store = try Self.open(dir, fs) { $0.durability = .full }
        try TxDocument.commit(store, id: 0)
        fs.faults.withLock { $0.failSync = true }
        #expect { try TxDocument.commit(store, id: 1) } throws: { ($0 as? SegmentStoreError)?.errno == EIO }
        fs.faults.withLock { $0.failSync = false }
        try TxDocument.commit(store, id: 2)
        #expect(try StoreCheck.transactions(in: store) == [0, 2])
        try store.close()
    }

    @Test func diskFullWhileSealingKeepsTheDataAndRetries() throws {
        let dir = try TemporaryDirectory("store")
        let fs = FaultyFileSystem()
        let store = try Self.open(dir, fs)
        for id in 0..<20 { try TxDocument.commit(store, id: Int64(id)) }
        fs.faults.withLock { $0.bytesUntilFull = 0 }
        #expect { try store.flush() } throws: { ($0 as? SegmentStoreError)?.errno == ENOSPC }
        #expect(store.backgroundError?.errno == ENOSPC)
        #expect(store.pendingSegments().isEmpty)
        #expect(store.counters.pendingObjects == (0..<20).reduce(0) { $0 + $1 % 3 + 1 })
        fs.faults.withLock { $0.bytesUntilFull = nil }
        #expect(try StoreCheck.transactions(in: store) == (0..<20).map(Int64.init))
        #expect(store.backgroundError == nil)
        #expect(try !FileManager.default.contentsOfDirectory(atPath: dir.path("store")).contains { $0.hasSuffix(".tmp") })
        try store.close()
    }

    @Test func budgetPolicyFail() throws {
        let dir = try TemporaryDirectory("store")
        let store = try Self.open(dir, FaultyFileSystem()) {
            $0.maxPendingBytes = 8 << 10
            $0.budgetPolicy = .fail
        }
        defer { try? store.close() }
        var committed = 0
        var full = false
        for id in 0..<1_000 {
            do {
                try TxDocument.commit(store, id: Int64(id))
                committed += 1
            } catch let error as SegmentStoreError where error.code == .storageFull {
                full = true
                break
            }
        }
        #expect(full && committed > 10)
        #expect(store.counters.failedCommits == 1)
        #expect(store.counters.pendingBytes <= 8 << 10)
        #expect(try StoreCheck.transactions(in: store).count == committed)
    }

    @Test func budgetPolicyDropOldestCountsWhatItDrops() throws {
        let dir = try TemporaryDirectory("store")
        let store = try Self.open(dir, FaultyFileSystem()) {
            $0.maxPendingBytes = 6 << 10
            $0.budgetPolicy = .dropOldest
        }
        defer { try? store.close() }
        for id in 0..<400 {
            try TxDocument.commit(store, id: Int64(id))
            if id % 20 == 19 { try store.flush() }
        }
        let counters = store.counters
        #expect(counters.droppedSegments > 0)
        let kept = try StoreCheck.transactions(in: store)
        #expect(counters.droppedObjects + kept.reduce(0) { $0 + Int($1 % 3 + 1) } == counters.committedObjects)
        #expect(kept.last == 399)  // the newest data is kept
        let log = try String(contentsOfFile: dir.path("store/quarantine/dropped.jsonl"), encoding: .utf8)
        #expect(log.split(separator: "\n").count == counters.droppedSegments)
    }

    @Test func budgetPolicyBlockWaitsForAnAcknowledgement() throws {
        let dir = try TemporaryDirectory("store")
        let store = try Self.open(dir, FaultyFileSystem()) {
            $0.maxPendingBytes = 4 << 10
            $0.budgetPolicy = .block(milliseconds: 300)
        }
        defer { try? store.close() }
        var id: Int64 = 0
        while store.counters.pendingBytes < 3 << 10 {
            try TxDocument.commit(store, id: id)
            id += 1
        }
        try store.flush()
        while true {  // fill up to the budget
            do { try TxDocument.commit(store, id: id); id += 1 } catch { break }
        }
        let started = Date()
        #expect { try TxDocument.commit(store, id: id) } throws: { ($0 as? SegmentStoreError)?.code == .storageFull }
        #expect(Date().timeIntervalSince(started) >= 0.25)
        // An acknowledgement from another thread frees space while the commit waits.
        let first = try #require(store.pendingSegments().first)
        let acknowledger = Thread {
            usleep(50_000)
            try? store.acknowledge(segment: first.number)
        }
        acknowledger.start()
        try TxDocument.commit(store, id: id)
    }

    /// A real, small file system (a 256 KiB tmpfs, where this process may
    /// mount one; skipped otherwise) fills up under the store.
    @Test func smallRealFileSystemFillsUp() throws {
        let dir = try TemporaryDirectory("tinyfs")
        let mountPoint = dir.path("mnt")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=256k") == 0 else {
            print("smallRealFileSystemFillsUp: cannot mount a tmpfs here (errno \(errno)); covered by the seam tests")
            return
        }
        defer { umount(mountPoint) }
        var configuration = SegmentStore.Configuration(directory: mountPoint + "/store")
        configuration.durability = .full
        configuration.maxSegmentAgeMilliseconds = 60_000
        var store = try SegmentStore.open(configuration)
        var committed: [Int64] = []
        for id in 0..<20 {
            try TxDocument.commit(store, id: Int64(id))
            committed.append(Int64(id))
        }
        // Fill the rest of the file system.
        let filler = Glibc.open(mountPoint + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        #expect(filler >= 0)
        let block = [UInt8](repeating: 7, count: 4096)
        for _ in 0..<1_000 where block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
        Glibc.close(filler)
        var sawFull = false
        for id in 20..<2_000 {
            do {
                try TxDocument.commit(store, id: Int64(id))
                committed.append(Int64(id))
            } catch let error as SegmentStoreError {
                #expect(error.errno == ENOSPC, "\(error)")
                sawFull = true
                break
            }
        }
        #expect(sawFull)
        // Space comes back: the store continues where it was.
        unlink(mountPoint + "/filler")
        for id in 3_000..<3_010 {
            try TxDocument.commit(store, id: Int64(id))
            committed.append(Int64(id))
        }
        try store.close()
        store = try SegmentStore.open(configuration)
        #expect(try StoreCheck.transactions(in: store) == committed)
        try store.close()
    }
}
