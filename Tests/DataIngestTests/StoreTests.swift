import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport
import IngestTestSupport

@Suite struct StoreTests {
    static func configuration(_ dir: TemporaryDirectory, _ change: (inout SegmentStore.Configuration) -> Void = { _ in })
        -> SegmentStore.Configuration
    {
        var configuration = SegmentStore.Configuration(directory: dir.path("store"))
        configuration.maxSegmentAgeMilliseconds = 60_000  // seal only on flush unless a test says otherwise
        change(&configuration)
        return configuration
    }

    @Test func commitsAreSealedReadAndAcknowledged() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(Self.configuration(dir))
        var receipts: [CommitReceipt] = []
        for id in 0..<200 { receipts.append(try TxDocument.commit(store, id: Int64(id))!) }
        #expect(zip(receipts, receipts.dropFirst()).allSatisfy { $0.transactionNumber < $1.transactionNumber })
        #expect(try store.commit { _ in } == nil)  // an empty transaction writes nothing
        let ids = try StoreCheck.transactions(in: store)
        #expect(ids == (0..<200).map(Int64.init))
        let segments = store.pendingSegments()
        #expect(segments.count == 1)
        // The sealed file is a standard gzip file.
        let plain = try Gzip.decompress([UInt8](FileManager.default.contents(atPath: segments[0].path)!))
        #expect(Array(plain.prefix(8)) == SegmentFormat.magic)
        var counters = store.counters
        let objects = (0..<200).reduce(0) { $0 + $1 % 3 + 1 }
        #expect(counters.committedObjects == objects && counters.committedTransactions == 200)
        #expect(counters.pendingObjects == objects && counters.sealedObjects == objects)
        try store.acknowledge(segment: segments[0].number)
        #expect(throws: SegmentStoreError.self) { try store.acknowledge(segment: segments[0].number) }
        counters = store.counters
        #expect(counters.pendingObjects == 0 && counters.acknowledgedObjects == objects && counters.pendingBytes == 0)
        #expect(store.pendingSegments().isEmpty)
        try store.close()
        // Numbers are never reused after everything was acknowledged.
        let again = try SegmentStore.open(Self.configuration(dir))
        let receipt = try TxDocument.commit(again, id: 1)!
        #expect(receipt.segmentNumber > segments[0].number)
        try again.close()
    }

    /// Pending data is private: the store's directory is 0700 and every
    /// file in it 0600, whatever the umask lets through.
    @Test func pendingDataIsReadableByItsOwnerOnly() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(Self.configuration(dir))
        _ = try TxDocument.commit(store, id: 1)
        try store.flush()
        _ = try TxDocument.commit(store, id: 2)  // and an active segment beside the sealed one
        let root = dir.path("store")
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        #expect(try mode(root) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: root)
            .filter { !$0.hasPrefix(".") && $0 != "quarantine" }
        #expect(files.contains { $0.hasSuffix(".seg.gz") } && files.contains { $0.hasSuffix(".active") })
        for file in files {
            #expect(try mode(root + "/" + file) == 0o600, "\(file)")
        }
        try store.close()
    }

    @Test func aTransactionCollectedBeforehandCommitsWhole() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(Self.configuration(dir))
        defer { try? store.close() }
        var tx = TransactionWriter()
        for k in 0..<3 { try tx.append(collection: "Tx", document: TxDocument.make(id: 5, k: Int32(k), n: 3)) }
        #expect(throws: SegmentError.self) { try tx.append(collection: "Tx", document: [1, 2, 3]) }
        #expect(tx.recordCount == 3)
        let receipt = try #require(try store.commit(tx))
        #expect(receipt.recordCount == 3)
        #expect(try store.commit(TransactionWriter()) == nil)
        #expect(try StoreCheck.transactions(in: store) == [5])
    }

    @Test func sizeAndAgeSealWithoutFlush() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(
            Self.configuration(dir) {
                $0.maxSegmentBytes = 4096
                $0.maxSegmentAgeMilliseconds = 100
            })
        defer { try? store.close() }
        for id in 0..<300 { try TxDocument.commit(store, id: Int64(id)) }
        // Wait (bounded) for the sealer: size rotation plus the age timer seal everything.
        let objects = (0..<300).reduce(0) { $0 + $1 % 3 + 1 }
        _ = eventually(timeout: 10) { store.counters.sealedObjects >= objects }
        #expect(store.counters.sealedObjects == objects)
        #expect(store.pendingSegments().count > 5)
        #expect(try StoreCheck.transactions(in: store) == (0..<300).map(Int64.init))
    }

    /// The active segment cut at every byte offset of its last transaction
    /// recovers to the transaction before it.
    @Test func truncationAtEveryOffsetOfTheLastTransaction() throws {
        let dir = try TemporaryDirectory("store")
        let source = try SegmentStore.open(Self.configuration(dir))
        for id in 0..<2 { try TxDocument.commit(source, id: Int64(id)) }  // the last has 2 records
        let activeName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path("store")).first { $0.hasSuffix(".active") })
        var bytes = [UInt8](FileManager.default.contents(atPath: dir.path("store/" + activeName))!)
        try source.close()
        // Where transaction 2 starts: after the commit frame of transaction 1.
        let reader = try SegmentReader(source: MemoryByteSource(bytes), requiresEnd: false)
        var lastStart = 0
        while let event = try reader.next() {
            if case .commit(let c) = event, c.recordCount == 1 { lastStart = reader.offsetAfterLastCommit }
        }
        // The stream ends at the preallocated, unwritten space after its last commit.
        bytes = Array(bytes[..<reader.offsetAfterLastCommit])
        #expect(lastStart > 0 && lastStart < bytes.count)
        for cut in lastStart...bytes.count {
            let caseDir = dir.path("cut-\(cut)")
            try FileManager.default.createDirectory(atPath: caseDir, withIntermediateDirectories: true)
            try Data(bytes[..<cut]).write(to: URL(fileURLWithPath: caseDir + "/" + activeName))
            var configuration = SegmentStore.Configuration(directory: caseDir)
            configuration.durability = .none
            let store = try SegmentStore.open(configuration)
            let ids = try StoreCheck.transactions(in: store)
            #expect(ids == (cut == bytes.count ? [0, 1] : [0]), "cut at \(cut)")
            try store.close()
            try FileManager.default.removeItem(atPath: caseDir)
        }
    }

    /// What `kill -9` can leave in a preallocated, memory-mapped active
    /// segment: the last group partly or wholly copied but not published (its
    /// first byte, stored last, still 0), in any order of the copy, followed
    /// by the preallocated zeros. Recovery cuts it back to the transaction
    /// before it, reports no damage, and the file's zero tail is removed.
    @Test func preallocatedActiveSegmentTornMidTransactionRecovers() throws {
        let dir = try TemporaryDirectory("store")
        let source = try SegmentStore.open(Self.configuration(dir) { $0.preallocationBytes = 64 << 10 })
        guard source.mapsActiveSegments else {
            try source.close()
            print("preallocatedActiveSegmentTornMidTransactionRecovers: this file system gets write(2) appends; skipped")
            return
        }
        for id in 0..<2 { try TxDocument.commit(source, id: Int64(id)) }  // the last has 2 records
        let activeName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path("store")).first { $0.hasSuffix(".active") })
        let bytes = [UInt8](FileManager.default.contents(atPath: dir.path("store/" + activeName))!)
        try source.close()
        let reader = try SegmentReader(source: MemoryByteSource(bytes), requiresEnd: false)
        var lastStart = 0
        while let event = try reader.next() {
            if case .commit(let c) = event, c.recordCount == 1 { lastStart = reader.offsetAfterLastCommit }
        }
        let end = reader.offsetAfterLastCommit
        // The file was extended ahead of its content, with zeros.
        #expect(reader.endedAtUnwrittenSpace)
        #expect(bytes.count >= 64 << 10 && end < bytes.count && bytes[end...].allSatisfy { $0 == 0 })
        #expect(bytes[lastStart] == SegmentFormat.FrameType.record)

        func recover(_ file: [UInt8], _ label: String) throws -> [Int64] {
            let caseDir = dir.path("case")
            try FileManager.default.createDirectory(atPath: caseDir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: caseDir) }
            try Data(file).write(to: URL(fileURLWithPath: caseDir + "/" + activeName))
            var configuration = SegmentStore.Configuration(directory: caseDir)
            configuration.durability = .none
            let store = try SegmentStore.open(configuration)
            defer { try? store.close() }
            // Recovery cut the file back (the sealer may already have sealed and removed it).
            var info = stat()
            #expect(stat(caseDir + "/" + activeName, &info) != 0 || Int(info.st_size) <= end, "\(label): the zero tail was not cut")
            #expect(store.quarantineReports().isEmpty, "\(label): an unpublished group was reported as damage")
            return try StoreCheck.transactions(in: store)
        }
        #expect(try recover(bytes, "published") == [0, 1])
        for cut in (lastStart + 1)...end {
            // Copied from the front up to `cut`, the first byte not yet stored.
            var front = bytes
            front[lastStart] = 0
            for i in cut..<end { front[i] = 0 }
            #expect(try recover(front, "front \(cut)") == [0], "front to \(cut)")
            // Copied from the back (memcpy may store in any order).
            if cut % 4 == 0 {
                var back = bytes
                for i in lastStart..<cut { back[i] = 0 }
                #expect(try recover(back, "back \(cut)") == [0], "back from \(cut)")
            }
        }
    }

    /// A mapped store's active file is preallocated ahead of its content; the
    /// counters count the content.
    @Test func activeSegmentIsPreallocatedAheadOfItsContent() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(Self.configuration(dir) { $0.preallocationBytes = 128 << 10 })
        guard store.mapsActiveSegments else {
            try store.close()
            print("activeSegmentIsPreallocatedAheadOfItsContent: this file system gets write(2) appends; skipped")
            return
        }
        for id in 0..<50 { try TxDocument.commit(store, id: Int64(id)) }
        let activeName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path("store")).first { $0.hasSuffix(".active") })
        var info = stat()
        #expect(stat(dir.path("store/" + activeName), &info) == 0)
        #expect(Int(info.st_size) == 128 << 10)
        #expect(store.counters.pendingBytes < 16 << 10)  // content, not the reservation
        #expect(try StoreCheck.transactions(in: store) == (0..<50).map(Int64.init))
        // preallocationBytes 0: one write(2) per group, the file is exactly its content.
        var plainConfiguration = SegmentStore.Configuration(directory: dir.path("plain"))
        plainConfiguration.preallocationBytes = 0
        let plain = try SegmentStore.open(plainConfiguration)
        defer { try? plain.close() }
        try TxDocument.commit(plain, id: 1)
        #expect(!plain.mapsActiveSegments)
        let plainName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path("plain")).first { $0.hasSuffix(".active") })
        #expect(stat(dir.path("plain/" + plainName), &info) == 0)
        #expect(Int(info.st_size) == plain.counters.pendingBytes)
        try store.close()
    }

    /// Large transactions (written with pwrite into the preallocated space)
    /// between small ones (copied into the mapping) come back whole, in order.
    @Test func largeAndSmallTransactionsInAMappedSegment() throws {
        let dir = try TemporaryDirectory("store")
        var store = try SegmentStore.open(Self.configuration(dir) { $0.preallocationBytes = 64 << 10 })
        var expected: [Int64] = []
        for id in Int64(0)..<12 {
            if id % 3 == 2 {
                try store.commit { tx in
                    for k in 0..<Int32(id % 3 + 1) {
                        try tx.append(collection: "Tx", document: TxDocument.make(id: id, k: k, n: Int32(id % 3 + 1)))
                    }
                }
                // A 1,000-record transaction: id 1000 + id, records k = 0..<1000... checked by count below.
                try store.commit { tx in
                    for k in 0..<1_000 {
                        try tx.append(collection: "Big", document: TxDocument.make(id: 1_000 + id, k: Int32(k), n: 1_000))
                    }
                }
            } else {
                try TxDocument.commit(store, id: id)
            }
            expected.append(id)
        }
        try store.close()
        store = try SegmentStore.open(Self.configuration(dir))
        try store.flush()
        var small: [Int64] = []
        var big: [Int64: Int] = [:]
        for segment in store.pendingSegments() {
            let reader = try store.reader(for: segment)
            while let event = try reader.next() {
                guard case .record(let record) = event, let parsed = TxDocument.parse(record.document) else { continue }
                if record.collection == "Big" { big[parsed.id, default: 0] += 1 } else if parsed.k == 0 { small.append(parsed.id) }
            }
        }
        #expect(small == expected)
        #expect(big == [1_002: 1_000, 1_005: 1_000, 1_008: 1_000, 1_011: 1_000])
        #expect(store.quarantineReports().isEmpty)
        try store.close()
    }

    @Test func damagedActiveSegmentKeepsItsPrefixAndQuarantinesTheRest() throws {
        let dir = try TemporaryDirectory("store")
        let source = try SegmentStore.open(Self.configuration(dir))
        for id in 0..<6 { try TxDocument.commit(source, id: Int64(id)) }
        let activeName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path("store")).first { $0.hasSuffix(".active") })
        var bytes = [UInt8](FileManager.default.contents(atPath: dir.path("store/" + activeName))!)
        try source.close()
        // Where transaction 2 ends; damage a byte inside transaction 3.
        let reader = try SegmentReader(source: MemoryByteSource(bytes), requiresEnd: false)
        var ends: [Int] = []
        while let event = try reader.next() { if case .commit = event { ends.append(reader.offsetAfterLastCommit) } }
        bytes[ends[2] + 20] ^= 0xFF
        let caseDir = dir.path("damaged")
        try FileManager.default.createDirectory(atPath: caseDir, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: caseDir + "/" + activeName))
        let store = try SegmentStore.open(SegmentStore.Configuration(directory: caseDir))
        defer { try? store.close() }
        #expect(try StoreCheck.transactions(in: store) == [0, 1, 2])
        let report = try #require(store.quarantineReports().first)
        #expect(report.kind == "damagedActive")
        let kept = [UInt8](FileManager.default.contents(atPath: try #require(report.originalFile)) ?? Data())
        #expect(kept == Array(bytes[ends[2]...]))
    }

    @Test func corruptSealedSegmentGoesToQuarantineAndLaterOnesAreDelivered() throws {
        let dir = try TemporaryDirectory("store")
        var store = try SegmentStore.open(Self.configuration(dir))
        for id in 0..<30 {
            try TxDocument.commit(store, id: Int64(id))
            if id % 10 == 9 { try store.flush() }
        }
        let segments = store.pendingSegments()
        #expect(segments.count == 3)
        try store.close()
        // Damage the middle segment: flip bytes in its compressed data.
        var damaged = [UInt8](FileManager.default.contents(atPath: segments[1].path)!)
        for i in stride(from: damaged.count / 2, to: damaged.count - 8, by: 5) { damaged[i] ^= 0xA5 }
        try Data(damaged).write(to: URL(fileURLWithPath: segments[1].path))

        store = try SegmentStore.open(Self.configuration(dir))
        defer { try? store.close() }
        #expect(store.pendingSegments().map(\.number) == [segments[0].number, segments[2].number])
        #expect(try StoreCheck.transactions(in: store) == Array(0..<10) + Array(20..<30))
        let reports = store.quarantineReports()
        #expect(reports.count == 1)
        let report = try #require(reports.first)
        #expect(report.kind == "corrupt" && report.segmentNumber == segments[1].number)
        #expect(report.error != nil)
        #expect(FileManager.default.fileExists(atPath: report.originalFile ?? ""))
        if let salvaged = report.recordsFile {
            // The salvaged records form a readable segment.
            let reader = try SegmentReader(sealedFileAt: salvaged)
            var count = 0
            while let event = try reader.next() { if case .record = event { count += 1 } }
            #expect(count == report.salvagedRecords)
        }
        #expect(store.counters.quarantinedSegments == 1)
    }

    @Test func rejectedRecordsGoToQuarantineWithReasons() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(Self.configuration(dir))
        defer { try? store.close() }
        for id in 0..<4 { try TxDocument.commit(store, id: Int64(id)) }  // 1+2+3+1 = 7 records
        try store.flush()
        let segment = try #require(store.pendingSegments().first)
        #expect(throws: SegmentStoreError.self) { try store.reject(segment: segment.number, records: [99: "no such record"]) }
        try store.reject(segment: segment.number, records: [1: "t: expected string", 5: "unknown collection"])
        #expect(store.pendingSegments().isEmpty)
        let report = try #require(store.quarantineReports().first)
        #expect(report.kind == "rejected")
        #expect(report.rejections.map(\.index) == [1, 5])
        #expect(report.rejections.map(\.reason) == ["t: expected string", "unknown collection"])
        let reader = try SegmentReader(sealedFileAt: try #require(report.recordsFile))
        var documents: [[UInt8]] = []
        while let event = try reader.next() { if case .record(let r) = event { documents.append(r.document) } }
        #expect(documents.compactMap { TxDocument.parse($0)?.id } == [1, 2])
        let counters = store.counters
        #expect(counters.quarantinedObjects == 2 && counters.acknowledgedObjects == 5)
        #expect(counters.quarantinedBytes == 60)
    }

    @Test func eightThreadsCommitConcurrently() throws {
        let dir = try TemporaryDirectory("store")
        for durability in [SegmentStore.Durability.interval(milliseconds: 10), .full] {
            let path = dir.path("\(durability)")
            var configuration = SegmentStore.Configuration(directory: path)
            configuration.durability = durability
            configuration.maxSegmentBytes = 32 << 10
            let store = try SegmentStore.open(configuration)
            let perThread = durability == .full ? 40 : 400
            let failures = LockedBox(0)
            let group = DispatchGroup()
            for thread in 0..<8 {
                group.enter()
                Thread.detachNewThread {
                    for i in 0..<perThread {
                        do { try TxDocument.commit(store, id: Int64(thread * 100_000 + i)) } catch { failures.withLock { $0 += 1 } }
                    }
                    group.leave()
                }
            }
            #expect(group.wait(timeout: .now() + 60) == .success)
            #expect(failures.withLock { $0 } == 0)
            try store.close()
            let reopened = try SegmentStore.open(configuration)
            let ids = try StoreCheck.transactions(in: reopened)
            #expect(ids.count == 8 * perThread)
            #expect(Set(ids).count == ids.count)
            // Each thread's transactions keep their order.
            for thread in 0..<8 {
                let mine = ids.filter { $0 / 100_000 == Int64(thread) }
                #expect(mine == (0..<perThread).map { Int64(thread * 100_000 + $0) })
            }
            try reopened.close()
        }
    }

    @Test func sameDirectorySharesOneStoreInAProcess() throws {
        let dir = try TemporaryDirectory("store")
        let a = try SegmentStore.open(Self.configuration(dir))
        let b = try SegmentStore.open(SegmentStore.Configuration(directory: dir.path("store/../store")))
        #expect(a === b)
        try TxDocument.commit(a, id: 1)
        try b.close()  // still open through `a`
        try TxDocument.commit(a, id: 2)
        try a.close()
        #expect { try TxDocument.commit(a, id: 3) } throws: { ($0 as? SegmentStoreError)?.code == .closed }
    }

    /// The reading runs in a child process so that other tests running in
    /// parallel in this process cannot disturb its memory figures.
    @Test func memoryStaysFlatWhileReadingABacklog() throws {
        let dir = try TemporaryDirectory("store")
        let configuration = Self.configuration(dir) { $0.durability = .none }
        let store = try SegmentStore.open(configuration)
        // 60 segments of 30 transactions of 100 records each (~5 MB of records).
        var id: Int64 = 0
        for _ in 0..<60 {
            for _ in 0..<30 {
                try store.commit { tx in
                    for k in 0..<100 { try tx.append(collection: "Tx", document: TxDocument.make(id: id, k: Int32(k), n: 100)) }
                }
                id += 1
            }
            try store.flush()
        }
        #expect(store.pendingSegments().count == 60)
        try store.close()
        // Under AddressSanitizer (Scripts/sanitize.sh address) freed memory
        // is held in a quarantine (256 MB by default, to catch use after
        // free), so resident memory grows with everything freed: 54 MB here,
        // which is ASan's, not the reader's. The child measures growth, so it
        // runs without a quarantine; ASan still checks every access. No
        // effect on an uninstrumented child.
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "quarantine_size_mb=0"
        let output = try runProcess(StoreCheck.childPath, ["read", configuration.directory], environment: environment, timeout: 120).output
        let fields = output.split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(fields.count == 6, "child said: \(output)")
        guard fields.count == 6, let records = Int(fields[1]), let baseline = Int(fields[3]), let peak = Int(fields[5]) else { return }
        print("reading 60 segments: resident \(baseline) bytes after 5, peak \(peak) after 60")
        #expect(records == 180_000)
        #expect(baseline > 0)
        // Reading ~5 MB of records must not accumulate them.
        #expect(peak - baseline < 1 << 20, "resident memory grew by \(peak - baseline) bytes")
    }
}
