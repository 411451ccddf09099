#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// The client against a real `ingest-server` process on 127.0.0.1, checked
/// row by row in the server's SQLite.
@Suite(.serialized) struct SyncEndToEndTests {
    /// Objects for the 4-thread test: 20,000 by default, `SYNC_TEST_OBJECTS` for more.
    static let manyObjects = Int(ProcessInfo.processInfo.environment["SYNC_TEST_OBJECTS"] ?? "") ?? 20_000

    @Test func theSeedsCodeRunsEndToEnd() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let (child, out) = try startSyncClientChild(["seed"], in: directory.path, server: server, appId: appId)
        let line = try readLine(out.fileHandleForReading.fileDescriptor, timeout: 60)
        _ = eventually(timeout: 20) { !child.isRunning }
        reap(child, within: 0)
        #expect(line == "uploaded")
        #expect(child.terminationStatus == 0)
        #expect(try server.query(appId, "SELECT count(*) FROM WeatherSensor") == [1])
        #expect(try server.queryText(appId, "SELECT deviceId FROM WeatherSensor") == ["WX1278UIT"])
        #expect(try server.query(appId, "SELECT windSpeedInMph FROM WeatherSensor") == [2])
        // The metadata went where App.Configuration's default says, private to the owner.
        let users = directory.path + "/dataingest-metadata/\(appId)/users"
        let ids = try FileManager.default.contentsOfDirectory(atPath: users)
        #expect(ids.count == 1)
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(users)/\(ids[0])/user.json")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func manyObjectsFromFourThreadsArriveExactlyOnce() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        let errors = ErrorCollector()
        errors.install(on: app)
        let user = try await app.login(credentials: .anonymous)
        #expect(app.currentUser === user)
        #expect(app.allUsers.keys.sorted() == [user.id])
        let total = Self.manyObjects
        let perThread = total / 4
        let failures = LockedBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            do {
                let realm = try openSyncedRealm(user)
                try writeReadings(realm, (thread * perThread)..<((thread + 1) * perThread), perTransaction: 100, thread: thread)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        try await user.session.wait(for: .upload, timeout: 120)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: perThread * 4)
        #expect(try server.query(appId, "SELECT count(DISTINCT thread) FROM SyncReading") == [4])
        #expect(user.session.storeCounters?.pendingObjects == 0)
        #expect(errors.errors.isEmpty)
        #expect(user.session.connectionState == .connected)
        #expect(user.session.state == .active)
    }

    @Test func serverKilledMidStreamLosesNothingAndRepeatsNothing() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        let user = try await app.login(credentials: .anonymous)
        let total = 20_000
        let writer = Task.detached {
            let realm = try openSyncedRealm(user)
            for chunk in 0..<20 {
                try writeReadings(realm, (chunk * 1000)..<((chunk + 1) * 1000), perTransaction: 50)
                await pauseAsync(0.02)
            }
        }
        // Kill the server once some, but not all, objects have arrived.
        let started = await eventuallyAsync(timeout: 30) {
            (try? server.query(appId, "SELECT count(*) FROM SyncReading").first ?? 0) ?? 0 > 0
        }
        #expect(started)
        server.kill9()
        let atKill = try server.query(appId, "SELECT count(*) FROM SyncReading").first ?? 0
        await pauseAsync(0.5)
        try server.restart()
        try await writer.value
        try await user.session.wait(for: .upload, timeout: 120)
        #expect(atKill < Int64(total))
        try server.expectExactlyOnce(appId, table: "SyncReading", count: total)
    }

    @Test func clientKilledMidStreamUploadsTheRestOnce() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        func child(_ arguments: [String]) throws -> (Process, Pipe) {
            try startSyncClientChild(arguments, in: directory.path, server: server, appId: appId)
        }
        // The first child commits up to 60,000 readings in transactions of 50, 5 ms apart, and is killed mid-stream.
        let (first, firstOut) = try child(["stream", "60000", "50", "5000"])
        // A reader thread keeps the last "committed N" line (and the pipe drained);
        // the child is killed once the server holds some of its objects.
        let last = LockedBox(0)
        let fd = firstOut.fileHandleForReading.fileDescriptor
        let readerDone = DispatchSemaphore(value: 0)
        let reader = Thread {
            while let line = try? readLine(fd, timeout: 30), !line.isEmpty {
                if line.hasPrefix("committed "), let n = Int(line.dropFirst(10)) { last.withLock { $0 = n } }
            }
            readerDone.signal()
        }
        reader.start()
        let arrived = eventually(timeout: 60) { server.count(appId, "Reading") > 0 && last.withLock { $0 } >= 5_000 }
        #expect(arrived)
        reap(first, within: 0)
        // The reader takes the last lines written before the kill, up to the end of the pipe.
        _ = readerDone.wait(timeout: .now() + 5)
        let lastCommitted = last.withLock { $0 }
        #expect(lastCommitted >= 5_000)
        #expect(lastCommitted < 60_000)
        let beforeRestart = server.count(appId, "Reading")
        #expect(beforeRestart > 0)
        // The second run restores the user from disk and drains what the first left.
        let (second, secondOut) = try child(["drain"])
        let line = try readLine(secondOut.fileHandleForReading.fileDescriptor, timeout: 120)
        reap(second, within: 0)
        #expect(line == "uploaded")
        let total = try server.query(appId, "SELECT count(*) FROM Reading").first ?? 0
        let distinct = try server.query(appId, "SELECT count(DISTINCT seq) FROM Reading").first ?? 0
        let maxSeq = try server.query(appId, "SELECT max(seq) FROM Reading").first ?? 0
        // Every reported commit arrived, nothing twice, and whole transactions only.
        #expect(total == distinct)
        #expect(total >= Int64(lastCommitted))
        #expect(total == maxSeq + 1)
        #expect(total % 50 == 0)
        #expect(beforeRestart < Int64(lastCommitted))
    }

    @Test func backlogDrainsWhenTheServerComesBack() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        let user = try await app.login(credentials: .anonymous)
        server.kill9()
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<10_000, perTransaction: 100)
        // While the server is down everything stays pending on disk.
        await pauseAsync(1.5)
        #expect(user.session.storeCounters?.pendingObjects == 10_000)
        #expect(user.session.connectionState == .disconnected)
        try server.restart()
        try await user.session.wait(for: .upload, timeout: 60)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 10_000)
    }

    /// An upload refused while the server is down waits out a retry delay
    /// (here 15 to 30 s); a server restarted meanwhile on the same port is
    /// found by the session's probe and used within about
    /// `reconnectProbeInterval`, not at the end of the delay.
    @Test func aServerRestartedDuringALongRetryDelayIsUsedAgainAtOnce() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path) {
            $0.sync.initialBackoff = 30
            $0.sync.maximumBackoff = 30
            $0.sync.reconnectProbeInterval = 0.5
        }
        let user = try await app.login(credentials: .anonymous)
        server.kill9()
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<100, perTransaction: 100)
        try user.session.openStore().flush()
        #expect(await eventuallyAsync(timeout: 20) { user.session.transportFailures >= 1 })  // refused: waiting
        await pauseAsync(1)
        try server.restart()
        let restarted = monotonicNow()
        try await user.session.wait(for: .upload, timeout: 12)
        #expect(monotonicNow() - restarted < 8, "uploaded \(monotonicNow() - restarted) s after the restart")
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 100)
        _ = try await user.logOut()
    }

    /// The same with probing off: the restarted server waits for the delay
    /// (the test above is not vacuous); `reconnect()` ends the wait.
    @Test func withoutProbingARestartedServerWaitsForTheRetryDelay() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path) {
            $0.sync.initialBackoff = 30
            $0.sync.maximumBackoff = 30
            $0.sync.reconnectProbeInterval = 0
        }
        let user = try await app.login(credentials: .anonymous)
        server.kill9()
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<100, perTransaction: 100)
        try user.session.openStore().flush()
        #expect(await eventuallyAsync(timeout: 20) { user.session.transportFailures >= 1 })
        try server.restart()
        await pauseAsync(3)
        #expect(server.count(appId, "SyncReading") == 0)  // still in its 15 to 30 s delay
        user.session.reconnect()
        try await user.session.wait(for: .upload, timeout: 20)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 100)
        _ = try await user.logOut()
    }

    @Test func memoryStaysFlatWhileABacklogWaitsForTheServer() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("sync-client-child"))
        process.arguments = ["backlog", "100000"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        var environment = ProcessInfo.processInfo.environment
        environment["APP_ID"] = server.developmentAppId
        environment["DATAINGEST_BASE_URL"] = server.baseURL.absoluteString
        environment["DATAINGEST_METADATA_DIRECTORY"] = nil
        process.environment = environment
        let out = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardInput = input
        try process.run()
        defer {
            reap(process, within: 0)
        }
        let fd = out.fileHandleForReading.fileDescriptor
        #expect(try readLine(fd, timeout: 30) == "logged-in")
        server.kill9()
        input.fileHandleForWriting.write(Data("go\n".utf8))
        #expect(try readLine(fd, timeout: 60) == "committed 100000")
        var samples: [(rss: Int, pending: Int)] = []
        for _ in 0..<13 {
            let parts = try readLine(fd, timeout: 10).split(separator: " ")
            guard parts.count == 4, let rss = Int(parts[1]), let pending = Int(parts[3]) else { break }
            samples.append((rss, pending))
        }
        #expect(samples.count == 13)
        // The whole backlog waits on disk; the client's memory does not grow while it retries.
        #expect(samples.allSatisfy { $0.pending == 100_000 })
        let rss = samples.map(\.rss)
        print("client resident KiB while waiting with 100,000 objects pending: \(rss)")
        if let first = rss.first, let peak = rss.max() { #expect(peak - first < 4 * 1024) }
    }

    @Test func logOutWithPendingDataKeepsItForTheNextLogin() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path) { $0.sync.logOutUploadTimeout = 1 }
        let user = try await app.login(credentials: .anonymous)
        server.kill9()
        do {
            let realm = try openSyncedRealm(user)
            try writeReadings(realm, 0..<3_000, perTransaction: 100)
        }
        let report = try await user.logOut()
        #expect(report.pendingObjects == 3_000)
        #expect(report.uploadedObjects == 0)
        #expect(report.uploadError != nil)
        #expect(user.state == .loggedOut)
        #expect(app.currentUser == nil)
        #expect(user.hasPendingDataOnDisk)
        try server.restart()
        // The next anonymous login resumes that user and uploads its data.
        let again = try await app.login(credentials: .anonymous)
        #expect(again.id == user.id)
        try await again.session.wait(for: .upload, timeout: 60)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 3_000)
        // With nothing pending, logOut revokes the refresh token and keeps nothing.
        let second = try await again.logOut()
        #expect(second.pendingObjects == 0)
        #expect(again.refreshToken == nil)
    }

    @Test func aRefusedAccessTokenIsRefreshedAndTheUploadRetried() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        let user = try await app.login(credentials: .anonymous)
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<1_000, perTransaction: 100)
        try await user.session.wait(for: .upload, timeout: 30)
        // The server refuses this token (401 invalid_token), as it does an expired one.
        let original = try #require(user.accessToken)
        try user.change { $0.accessToken = "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjk5OTk5OTk5OTl9.forged" }
        try writeReadings(realm, 1_000..<5_000, perTransaction: 100)
        try await user.session.wait(for: .upload, timeout: 30)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 5_000)
        // Replaced by a valid token (equal to the original when issued within the same second:
        // the claims have one-second resolution).
        let refreshed = try #require(user.accessToken)
        #expect(!refreshed.hasSuffix(".forged"))
        #expect(AccessTokenClaims(token: refreshed).expiresAt ?? 0 >= AccessTokenClaims(token: original).expiresAt ?? .infinity)
        // The refreshed token was persisted (mode 0600) for the next run.
        let stored = try String(contentsOfFile: app.records.userDirectory(user.id) + "/user.json", encoding: .utf8)
        #expect(stored.contains(refreshed))
    }

    @Test func aPermanentlyRefusedSegmentIsQuarantinedAndReported() async throws {
        let directory = try TemporaryDirectory("sync")
        // Bodies above 600 bytes get 413: a permanent refusal.
        let server = try SyncTestServer(in: directory.path, extraArguments: ["--max-body-bytes", "600"])
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        let errors = ErrorCollector()
        errors.install(on: app)
        let user = try await app.login(credentials: .anonymous)
        let realm = try openSyncedRealm(user)
        try realm.write {
            for seq in 0..<200 {
                realm.create(
                    SyncReading.self,
                    value: [
                        "_id": ObjectId.generate(), "seq": seq, "thread": 0,
                        "payload": String(repeating: "\(seq)-incompressible-\(UUID())", count: 2),
                    ])
            }
        }
        try await user.session.wait(for: .upload, timeout: 30)
        let reported = errors.errors.filter { $0.code == .segmentRejected }
        #expect(reported.count == 1)
        #expect(reported.first?.httpStatus == 413)
        let quarantine = try user.session.quarantine()
        let objects = try quarantine.objects()
        #expect(objects.count == 200)
        #expect(Set(objects.map { $0.document["seq"] }).count == 200)
        #expect(objects.allSatisfy { $0.reason.contains("413") })
        // Small segments still go through.
        try writeReadings(realm, 0..<3, perTransaction: 3)
        try await user.session.wait(for: .upload, timeout: 30)
        #expect(try server.query(appId, "SELECT count(*) FROM SyncReading") == [3])
        #expect(try quarantine.discard() == 200)
        #expect(try quarantine.objects().isEmpty)
    }
}
