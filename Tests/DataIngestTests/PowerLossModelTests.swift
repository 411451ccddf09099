import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

/// The model check of power loss (Docs/Reliability.md, "Power loss"): a run
/// of the store is recorded at its file-system seam (``RecordingFileSystem``),
/// then the states a power cut could leave at each recorded point are built
/// and recovered, and each must keep the properties the power-cut harness
/// checks on a real machine (``PowerCutTests``): every transaction whose
/// durability point (a sync of its file, or its sealed file's rename and the
/// directory sync) came before the cut is there, once and whole; nothing is
/// partial; a segment number never comes back with other contents; nothing
/// undamaged is quarantined; the store opens, twice.
///
/// Every recorded point is cut: the synced state, the latest (what `kill -9`
/// leaves), and `INGEST_POWER_MODEL_RANDOM` (default 1) random states of each
/// kind (`data=ordered` and strict), seeded by `INGEST_POWER_MODEL_SEED`.
@Suite(.serialized) struct PowerLossModelTests {
    struct Variant: Sendable, CustomStringConvertible {
        var name: String
        var durability: SegmentStore.Durability
        var preallocation = 8 << 10
        var key: Data?
        var description: String { name }
    }

    static let variants = [
        Variant(name: "full, mapped", durability: .full),
        Variant(name: "interval, mapped", durability: .interval(milliseconds: 2)),
        Variant(name: "none, mapped", durability: .none),
        Variant(name: "full, write(2)", durability: .full, preallocation: 0),
        Variant(
            name: "interval, encrypted", durability: .interval(milliseconds: 2),
            key: Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })),
    ]

    /// A scratch directory on tmpfs where there is one (syncs cost nothing there).
    static func scratch(_ name: String) throws -> TemporaryDirectory {
        if FileManager.default.fileExists(atPath: "/dev/shm") {
            let path = "/dev/shm/\(name)-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return TemporaryDirectory(adopting: path)
        }
        return try TemporaryDirectory(name)
    }

    static func configuration(_ directory: String, _ variant: Variant, fileSystem: (any StoreFileSystem)? = nil)
        -> SegmentStore.Configuration
    {
        var c = SegmentStore.Configuration(directory: directory)
        c.durability = variant.durability
        c.maxSegmentBytes = 4 << 10
        c.maxSegmentAgeMilliseconds = 60_000
        c.preallocationBytes = variant.preallocation
        c.encryptionKey = variant.key
        if let fileSystem { c.fileSystem = fileSystem }
        return c
    }

    /// What the recorded run did, for the checks.
    struct Run {
        var commits: [(id: Int64, segment: UInt64, point: Int)] = []
        /// Segment → transactions and the point at which they were uploaded;
        /// the point at which its acknowledgement (or rejection) began.
        var uploaded: [UInt64: (ids: [Int64], point: Int)] = [:]
        var acknowledged: [UInt64: Int] = [:]
        var storeId: SegmentStoreID?
        var openedAt = 0
    }

    /// Commits 72 transactions (sealed every 12, each batch uploaded: every
    /// third segment rejected into quarantine, the others acknowledged), with a
    /// close and reopen halfway.
    static func record(_ variant: Variant, in directory: String, _ recorder: RecordingFileSystem) throws -> Run {
        var run = Run()
        let path = directory
        var store = try SegmentStore.open(configuration(path, variant, fileSystem: recorder))
        run.storeId = store.storeId
        recorder.mark("opened")
        run.openedAt = recorder.pointCount - 1
        for i in 0..<72 {
            let receipt = try #require(try TxDocument.commit(store, id: Int64(i)))
            recorder.mark("committed \(i)")
            run.commits.append((Int64(i), receipt.segmentNumber, recorder.pointCount - 1))
            if i % 12 == 11 {
                try store.flush()
                for segment in store.pendingSegments() {
                    recorder.mark("uploading \(segment.number)")
                    run.uploaded[segment.number] = (try Self.read(store, segment).ids, recorder.pointCount - 1)
                    // From here on the segment may be gone.
                    recorder.mark("acknowledging \(segment.number)")
                    run.acknowledged[segment.number] = recorder.pointCount - 1
                    if segment.number % 3 == 0 {
                        try store.reject(segment: segment.number, records: [0: "refused by the model check"])
                    } else {
                        try store.acknowledge(segment: segment.number)
                    }
                }
            }
            if i == 35 {
                try store.close()
                store = try SegmentStore.open(configuration(path, variant, fileSystem: recorder))
                recorder.mark("reopened")
            }
        }
        try store.close()
        recorder.mark("closed")
        return run
    }

    /// A segment's transaction ids, and what was wrong with it.
    static func read(_ store: SegmentStore, _ segment: PendingSegment) throws -> (ids: [Int64], problems: [String]) {
        let reader = try store.reader(for: segment)
        var ids: [Int64] = []
        var problems: [String] = []
        var current: [(id: Int64, k: Int32, n: Int32)] = []
        while let event = try reader.next() {
            switch event {
            case .record(let record):
                if let parsed = TxDocument.parse(record.document) { current.append(parsed) } else { problems.append("unreadable record") }
            case .commit:
                let id = current.first?.id ?? -1
                let whole =
                    current.count == Int(id % 3 + 1)
                    && current.enumerated().allSatisfy {
                        $0.element.id == id && $0.element.k == Int32($0.offset) && $0.element.n == Int32(current.count)
                    }
                if !whole { problems.append("transaction \(id) partial (\(current.count) records)") }
                ids.append(id)
                current.removeAll()
            case .end:
                if !current.isEmpty { problems.append("records after the last commit") }
            }
        }
        return (ids, problems)
    }

    /// The first point at which transaction `commit` is durable: a sync of its
    /// active file after it committed, or the directory sync after its sealed
    /// file's rename.
    static func durablePoint(
        of commit: (id: Int64, segment: UInt64, point: Int), after start: Int,
        events: [(point: Int, kind: String, path: String)], root: String
    ) -> Int? {
        let name = SegmentStore.fileName(commit.segment)
        var renamed = false
        for event in events where event.point > start {
            if event.kind == "sync" && event.path.hasSuffix("/\(name).active") { return event.point }
            if event.kind == "rename" && event.path.hasSuffix("/\(name).seg.gz") { renamed = true }
            if renamed && event.kind == "sync" && event.path == root { return event.point }
        }
        return nil
    }

    /// Recovers one crash state and returns what is wrong with it.
    static func check(_ directory: String, point: Int, run: Run, required: Set<Int64>, variant: Variant, reopen: Bool) -> [String] {
        var problems: [String] = []
        do {
            var configuration = configuration(directory, variant)
            configuration.durability = .none
            var store = try SegmentStore.open(configuration)
            if point > run.openedAt, store.storeId != run.storeId { problems.append("STORE_ID changed") }
            for report in store.quarantineReports() where report.kind != "rejected" {
                problems.append("quarantined without damage: \(report.kind) segment \(report.segmentNumber): \(report.error ?? "")")
            }
            try store.flush()
            var seen = Set<Int64>()
            var contents: [UInt64: [Int64]] = [:]
            for segment in store.pendingSegments() {
                let (ids, segmentProblems) = try read(store, segment)
                problems += segmentProblems.map { "segment \(segment.number): \($0)" }
                contents[segment.number] = ids
                if let earlier = run.uploaded[segment.number], earlier.point <= point, earlier.ids != ids {
                    problems.append("segment \(segment.number) holds \(ids), uploaded before with \(earlier)")
                }
                for id in ids {
                    if !seen.insert(id).inserted { problems.append("transaction \(id) twice") }
                }
            }
            let missing = required.subtracting(seen)
            if !missing.isEmpty { problems.append("lost \(missing.sorted().prefix(8)) (durable before the cut)") }
            try store.close()
            if reopen {
                // A second recovery of the recovered state: no crash loop, same data.
                store = try SegmentStore.open(configuration)
                let again = Set(try store.pendingSegments().flatMap { try read(store, $0).ids })
                if again != seen { problems.append("a second open found other transactions") }
                try store.close()
            }
        } catch {
            problems.append("recovery failed: \(error)")
        }
        return problems
    }

    @Test(arguments: variants) func everyCrashStateRecovers(_ variant: Variant) throws {
        let environment = ProcessInfo.processInfo.environment
        let randomStates = environment["INGEST_POWER_MODEL_RANDOM"].flatMap(Int.init) ?? 1
        let seed = environment["INGEST_POWER_MODEL_SEED"].flatMap(UInt64.init) ?? UInt64(variant.name.utf8.count)
        let dir = try Self.scratch("power-model")
        let storePath = dir.path("store")
        try FileManager.default.createDirectory(atPath: storePath, withIntermediateDirectories: true)
        let recorder = RecordingFileSystem(root: storePath)
        let run = try Self.record(variant, in: storePath, recorder)
        let events = recorder.recordedEvents
        var durable = run.commits.map { Self.durablePoint(of: $0, after: $0.point, events: events, root: storePath) }
        if case .full = variant.durability {
            // Full durability: synced between the previous commit and this one's return.
            for (i, commit) in run.commits.enumerated() {
                let point = Self.durablePoint(of: commit, after: i == 0 ? 0 : run.commits[i - 1].point, events: events, root: storePath)
                if let point, point <= commit.point {
                    durable[i] = point
                } else {
                    Issue.record("transaction \(commit.id) was not synced before commit returned")
                }
            }
        }
        let points = recorder.pointCount
        var random = SplitMix64(seed: 0x5EED_0000 &+ seed)
        var states = 0
        var failures: [String] = []
        var index = 0
        while index < points && failures.count < 20 {
            let (floor, count) = recorder.bounds(of: index)
            var required = Set<Int64>()
            for (commit, point) in zip(run.commits, durable) {
                guard let point, point <= index else { continue }
                if let acknowledged = run.acknowledged[commit.segment], acknowledged <= index { continue }
                required.insert(commit.id)
            }
            var cases: [(Int?, RecordingFileSystem.Choice)] = [(floor, .synced), (count, .latest)]
            for _ in 0..<randomStates {
                cases.append((floor + Int(random.next() % UInt64(count - floor + 1)), .random))
                cases.append((floor + Int(random.next() % UInt64(count - floor + 1)), .strict))
            }
            for (k, (length, choice)) in cases.enumerated() {
                let target = dir.path("state-\(index)-\(k)")
                try recorder.materialize(point: index, metadataLength: length, choice: choice, random: &random, into: target)
                let problems = Self.check(target, point: index, run: run, required: required, variant: variant, reopen: k >= 2)
                states += 1
                if !problems.isEmpty {
                    failures.append(
                        "point \(index) (\(recorder.points[index].label)), metadata \(length ?? count) of \(floor)...\(count), \(choice): \(problems.joined(separator: "; "))"
                    )
                }
                try? FileManager.default.removeItem(atPath: target)
            }
            index += 1
        }
        print(
            "power-loss model, \(variant.name): \(points) points, \(events.count) syncs/renames/unlinks, \(states) crash states recovered, \(failures.count) failing"
        )
        for failure in failures { Issue.record("\(variant.name): \(failure)") }
        #expect(failures.count >= 20 || states == points * (2 + 2 * randomStates))
    }
}

/// Regression tests for what the power-cut harness and the model check found.
@Suite struct PowerLossRecoveryTests {
    /// The file of the store's active segment while the store is open (preallocated).
    static func activeFile(_ directory: String) throws -> (name: String, bytes: [UInt8]) {
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".active") })
        return (name, [UInt8](try #require(FileManager.default.contents(atPath: directory + "/" + name))))
    }

    /// The end offsets of the transactions (after each commit frame) of a plaintext stream.
    static func commitEnds(_ bytes: [UInt8]) throws -> [Int] {
        let reader = try SegmentReader(source: MemoryByteSource(bytes), requiresEnd: false)
        var ends: [Int] = []
        while let event = try reader.next() { if case .commit = event { ends.append(reader.offsetAfterLastCommit) } }
        return ends
    }

    /// Found by the qemu harness (ext4, `.interval` and `.none`): after a
    /// power cut, a group of transactions in the mapped active segment whose
    /// first sector reached the disk and whose next sector did not (still
    /// zeros from the preallocation) failed its checksum, and recovery
    /// quarantined the tail as `damagedActive`. It is an unsynced tail: cut
    /// back to the last whole transaction, no report.
    @Test func aGroupTornAtASectorBoundaryIsCutNotQuarantined() throws {
        let dir = try TemporaryDirectory("torn-sector")
        var configuration = SegmentStore.Configuration(directory: dir.path("store"))
        configuration.durability = .none
        configuration.preallocationBytes = 64 << 10
        let store = try SegmentStore.open(configuration)
        for id in 0..<40 { try TxDocument.commit(store, id: Int64(id)) }
        let (name, bytes) = try Self.activeFile(dir.path("store"))
        try store.close()
        let ends = try Self.commitEnds(bytes)
        // The first transaction that crosses a sector boundary.
        let index = try #require(ends.indices.dropFirst().first { ends[$0 - 1] / 512 != (ends[$0] - 1) / 512 && ends[$0] % 512 != 0 })
        let boundary = (ends[index] - 1) / 512 * 512
        #expect(boundary > ends[index - 1])
        for (variant, damage) in [("zeros", true), ("changed byte", false)] {
            var cut = bytes
            if damage {
                // That sector and everything after it never reached the disk.
                for i in boundary..<cut.count { cut[i] = 0 }
            } else {
                cut[boundary + 1] ^= 0xFF  // real damage inside the same transaction
                for i in ends[index]..<cut.count { cut[i] = 0 }
            }
            let caseDir = dir.path("case-\(variant)")
            try FileManager.default.createDirectory(atPath: caseDir, withIntermediateDirectories: true)
            try Data(cut).write(to: URL(fileURLWithPath: caseDir + "/" + name))
            let recovered = try SegmentStore.open(SegmentStore.Configuration(directory: caseDir))
            #expect(try StoreCheck.transactions(in: recovered) == (0..<Int64(index)).map { $0 }, "\(variant)")
            let reports = recovered.quarantineReports()
            if damage {
                #expect(reports.isEmpty, "an unsynced tail was quarantined: \(reports.map(\.kind))")
            } else {
                #expect(reports.map(\.kind) == ["damagedActive"], "a changed byte must still be reported")
            }
            try recovered.close()
        }
    }

    /// Found by the model check (strict choice, encrypted store): an encrypted
    /// active file whose size reached the disk without its last block's bytes
    /// ends in zeros where a block header belongs; recovery quarantined it.
    @Test func anEncryptedBlockThatNeverReachedTheDiskIsCutNotQuarantined() throws {
        let dir = try TemporaryDirectory("torn-encrypted")
        let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) })
        var configuration = SegmentStore.Configuration(directory: dir.path("store"))
        configuration.durability = .none
        configuration.encryptionKey = key
        let store = try SegmentStore.open(configuration)
        for id in 0..<6 { try TxDocument.commit(store, id: Int64(id)) }
        let (name, bytes) = try Self.activeFile(dir.path("store"))
        try store.close()
        // Two more blocks' worth of zeros after the last whole block.
        let caseDir = dir.path("case")
        try FileManager.default.createDirectory(atPath: caseDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir.path("store/KEY_CHECK"), toPath: caseDir + "/KEY_CHECK")
        try FileManager.default.copyItem(atPath: dir.path("store/STORE_ID"), toPath: caseDir + "/STORE_ID")
        try Data(bytes + [UInt8](repeating: 0, count: 100)).write(to: URL(fileURLWithPath: caseDir + "/" + name))
        var reopened = SegmentStore.Configuration(directory: caseDir)
        reopened.encryptionKey = key
        let recovered = try SegmentStore.open(reopened)
        #expect(try StoreCheck.transactions(in: recovered) == (0..<6).map { Int64($0) })
        #expect(recovered.quarantineReports().isEmpty)
        try recovered.close()
    }
}

/// The model check of the app's metadata directory: a login, a token
/// refresh and a few uploads through a real server, recorded at the seam
/// (``App/Configuration/segmentStore``'s file system, which the user records
/// use too); in every crash state after `login` returned the user is there,
/// current, with its refresh token, and after the refresh returned with the
/// new access token.
@Suite(.serialized) struct MetadataPowerLossTests {
    @Test func aLoggedInUserSurvivesEveryCrashState() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let scratch = try PowerLossModelTests.scratch("power-metadata")
        let root = scratch.path("metadata")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let recorder = RecordingFileSystem(root: root)
        let app = makeTestApp(id: appId, server: server, directory: scratch.path) { configuration in
            configuration.metadataDirectory = root
            configuration.segmentStore.fileSystem = recorder
        }
        let user = try await app.login(credentials: .anonymous)
        recorder.mark("logged in")
        let loggedIn = recorder.pointCount - 1
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<30, perTransaction: 10)
        try await user.session.wait(for: .upload, timeout: 60)
        let access = try await user.refreshAccessToken(replacing: nil)
        recorder.mark("refreshed")
        let refreshed = recorder.pointCount - 1
        recorder.mark("logging out")
        let loggingOut = recorder.pointCount - 1
        _ = try await user.logOut()
        let points = recorder.pointCount
        var random = SplitMix64(seed: 0xAB)
        var failures: [String] = []
        var states = 0
        for index in 0..<points where failures.count < 10 {
            let (floor, count) = recorder.bounds(of: index)
            for (length, choice) in [
                (floor, RecordingFileSystem.Choice.synced), (count, .latest),
                (floor + Int(random.next() % UInt64(count - floor + 1)), .strict),
            ] {
                let target = scratch.path("state-\(index)")
                try recorder.materialize(point: index, metadataLength: length, choice: choice, random: &random, into: target)
                let records = UserRecordStore(appDirectory: target + "/" + App.directoryName(appId))
                let record = records.loadAll().first { $0.id == user.id }
                states += 1
                var problems: [String] = []
                if index >= loggedIn && index < loggingOut {
                    if record == nil { problems.append("the logged-in user is gone") }
                    if record?.refreshToken == nil { problems.append("its refresh token is gone") }
                    if records.currentUserId != user.id { problems.append("it is no longer the current user") }
                }
                if index >= refreshed && index < loggingOut, let record, record.accessToken != access {
                    problems.append("the refreshed access token is gone")
                }
                if !problems.isEmpty {
                    failures.append("point \(index) (\(recorder.points[index].label)), \(choice): \(problems.joined(separator: "; "))")
                }
                try? FileManager.default.removeItem(atPath: target)
            }
        }
        print("power-loss model, metadata: \(points) points, \(states) crash states, \(failures.count) failing")
        for failure in failures { Issue.record("\(failure)") }
    }
}
