#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

/// The soak test: continuous ingest from a real client process
/// (`sync-client-child soak`) into a real `ingest-server` process on
/// 127.0.0.1 with its SQLite sink, while the test `kill -9`s the client and
/// the server at random, keeps the server down for a while (the client goes
/// on committing into its store), and fills the client's disk (RLIMIT_FSIZE:
/// its writes fail with EFBIG, a real kernel error on the store's real files).
/// At the end the database must hold every transaction the client reported
/// committed exactly once and whole, and none whose commit failed.
///
/// 60 seconds of chaos in the normal suite; `INGEST_SOAK_SECONDS=14400` for
/// four hours (Docs/Reliability.md).
@Suite(.serialized) struct SoakTests {
    @Test func continuousIngestSurvivesKillsOutagesAndFullDisks() throws {
        signal(SIGPIPE, SIG_IGN)  // a command sent to a client that was just killed
        let settings = SoakSettings.fromEnvironment()
        let directory = try TemporaryDirectory("sync")
        let clientDirectory = directory.path + "/client"
        try FileManager.default.createDirectory(atPath: clientDirectory, withIntermediateDirectories: true)
        let ledger = SoakLedger(logPath: settings.logPath ?? directory.path + "/committed.log")
        var random = SplitMix64(seed: settings.seed)
        // A development app with the shortest access-token lifetime (60 s), so
        // tokens are refreshed (and user.json rewritten) amid kills and full disks.
        let appId = "soak"
        let server = try SyncTestServer(
            in: directory.path,
            config: """
                {"apps": [{"id": "\(appId)", "developmentMode": true, "accessTokenLifetimeSeconds": 60, "rotateRefreshTokens": \(settings.rotateRefreshTokens), "auth": {"anon-user": {}}}]}
                """)
        var baseURL = server.baseURL

        var client: SoakClient?
        defer {
            client?.kill9()
            server.kill9()
        }
        var clientRuns = 0
        var clientKills = 0
        var serverKills = 0
        var outages = 0
        var outageSeconds = 0.0
        var portChanges = 0
        var diskFullEpisodes = 0
        var diskFullSeconds = 0.0
        var problems: [String] = []

        func startClient() throws {
            ledger.sync()  // what the last run reported is on disk before the next starts
            clientRuns += 1
            // Seqs never repeat across runs: each run starts at its own 2^32 block.
            let started = try SoakClient(
                directory: clientDirectory, appId: appId, baseURL: baseURL, firstSeq: clientRuns << 32,
                durability: clientRuns % 2 == 0 ? "full" : "interval", ledger: ledger)
            client = started
            guard started.waitUntilReady(timeout: 60) else {
                throw TestSupportError("client run \(clientRuns) did not get ready: \(ledger.box.withLock { $0.otherLines.suffix(5) })")
            }
        }

        /// Starts the server again on its port; if another process took the
        /// port meanwhile, on a new one, and restarts the client to use it.
        func restartServer() throws {
            do {
                try server.restart()
            } catch {
                try server.start(port: 0)
                baseURL = server.baseURL
                portChanges += 1
                client?.kill9()
                try startClient()
            }
        }

        try startClient()
        let started = monotonicNow()
        let deadline = started + settings.seconds
        var serverDownUntil: Double?
        var serverDownSince = 0.0
        var fullUntil: Double?
        var fullSince = 0.0
        var firstEvents = [0, 25, 50, 70].shuffled(using: &random)
        var nextEvent = started + Double.random(in: settings.eventGap, using: &random)
        // Bounded by time and by count (20 ticks a second).
        for _ in 0..<Int(settings.seconds * 20 + 100) {
            let now = monotonicNow()
            guard now < deadline else { break }
            usleep(50_000)
            guard let current = client else { break }
            if !current.isRunning {
                problems.append(
                    "client run \(clientRuns) exited by itself (status \(current.process.terminationStatus)): "
                        + "\(ledger.box.withLock { $0.otherLines.suffix(5) })")
                break
            }
            if serverDownUntil == nil && !server.isRunning {
                problems.append("ingest-server exited by itself; see \(directory.path)/server-stderr.log")
                break
            }
            if let until = serverDownUntil, now >= until {
                try restartServer()
                outageSeconds += monotonicNow() - serverDownSince
                serverDownUntil = nil
            }
            if let until = fullUntil, now >= until {
                current.send("space")
                diskFullSeconds += now - fullSince
                fullUntil = nil
            }
            guard now >= nextEvent else { continue }
            nextEvent = now + Double.random(in: settings.eventGap, using: &random)
            // Each kind of event once first (in a seeded order), then at random.
            func possible(_ roll: Int) -> Bool {
                roll < 25 || (roll < 70 ? serverDownUntil == nil : fullUntil == nil)
            }
            let roll: Int
            if let index = firstEvents.firstIndex(where: possible) {
                roll = firstEvents.remove(at: index)
            } else {
                roll = Int.random(in: 0..<100, using: &random)
            }
            switch roll {
            case 0..<25:
                // kill -9 the client (also during a disk-full episode or an outage) and start it again.
                current.kill9()
                clientKills += 1
                if fullUntil != nil {
                    diskFullSeconds += monotonicNow() - fullSince
                    fullUntil = nil
                }
                try startClient()
            case 25..<50 where serverDownUntil == nil:
                // kill -9 the server mid-stream and start it again at once.
                server.kill9()
                serverKills += 1
                usleep(UInt32.random(in: 0...300_000, using: &random))
                try restartServer()
            case 50..<70 where serverDownUntil == nil:
                // An outage: the client keeps committing into its store meanwhile.
                server.kill9()
                outages += 1
                serverDownSince = monotonicNow()
                serverDownUntil = serverDownSince + Double.random(in: settings.outage, using: &random)
            case 70..<100 where fullUntil == nil:
                // A full disk: writes past the limit fail with EFBIG until "space". Half
                // the episodes allow under 4 KiB (sealing fails too: the store keeps the
                // data in its active files and retries), half up to 48 KiB (commits fill
                // the active segment up to the limit, then fail).
                let limit =
                    Bool.random(using: &random)
                    ? UInt64.random(in: 0..<(4 << 10), using: &random)
                    : UInt64.random(in: (4 << 10)...(48 << 10), using: &random)
                current.send("full \(limit)")
                diskFullEpisodes += 1
                fullSince = monotonicNow()
                fullUntil = fullSince + Double.random(in: settings.diskFull, using: &random)
            default:
                break
            }
        }
        let chaosSeconds = monotonicNow() - started

        // The end: space again, the server up, and the client drains what it holds.
        if serverDownUntil != nil {
            try restartServer()
            outageSeconds += monotonicNow() - serverDownSince
        }
        let drainStarted = monotonicNow()
        var drainSeconds = 0.0
        var finalLine: String?
        if problems.isEmpty, let current = client {
            if fullUntil != nil {
                current.send("space")
                diskFullSeconds += monotonicNow() - fullSince
            }
            current.send("stop")
            // A refused refresh token never heals by itself: no need to wait the whole timeout.
            _ = eventually(timeout: 300) {
                current.box.withLock { $0.finalLine } != nil || !current.isRunning
                    || ledger.box.withLock { $0.syncErrors["invalidSession"] } != nil
            }
            finalLine = current.box.withLock { $0.finalLine }
            drainSeconds = (current.box.withLock { $0.finalLineAt } ?? monotonicNow()) - drainStarted
            let exited = eventually(timeout: 10) { !current.isRunning }
            if !exited { problems.append("the client did not exit within 10 s after its final drain") }
            current.kill9()
        }
        ledger.sync()

        // The check, transaction by transaction.
        let database = try SoakDatabase.read(path: server.sinkPath(appId))
        let reported = ledger.box.withLock { $0 }
        var missing: [Int] = []
        var failedPresent: [Int] = []
        var partial: [Int] = []
        var unreportedWhole = 0
        for (tx, n) in reported.committed {
            guard let found = database.transactions[tx], found.isWhole(tx: tx), found.rows == n else {
                missing.append(tx)
                continue
            }
        }
        for tx in reported.failed.keys where database.transactions[tx] != nil { failedPresent.append(tx) }
        for (tx, found) in database.transactions {
            if !found.isWhole(tx: tx) { partial.append(tx) }
            if reported.committed[tx] == nil && reported.failed[tx] == nil && found.isWhole(tx: tx) { unreportedWhole += 1 }
        }
        func byErrno(_ counts: [Int32: Int]) -> String {
            counts.sorted { $0.key < $1.key }
                .map { "\($0.key == 0 ? "other" : String(cString: strerror($0.key))) \($0.value)" }.joined(separator: ", ")
        }
        let errnos = byErrno(reported.failuresByErrno)
        let storeErrors = byErrno(reported.storeErrorsByErrno)
        let syncErrors = reported.syncErrors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        print(
            """
            soak summary (seed \(settings.seed), INGEST_SOAK_SECONDS=\(Int(settings.seconds))):
              duration: \(String(format: "%.1f", chaosSeconds)) s of chaos + \(String(format: "%.1f", drainSeconds)) s final drain
              client: \(clientRuns) runs, \(clientKills) kill -9; \(reported.committedObjects) objects in \(reported.committed.count) transactions reported committed
              failed commits: \(reported.failed.count) transactions (\(reported.failedObjects) objects)\(errnos.isEmpty ? "" : ": \(errnos)")
              server: \(serverKills) kill -9 with immediate restart, \(outages) outages (\(String(format: "%.1f", outageSeconds)) s down), \(portChanges) port changes
              disk full: \(diskFullEpisodes) episodes (\(String(format: "%.1f", diskFullSeconds)) s); background errors of the store (sealing, sync): \(storeErrors.isEmpty ? "none" : storeErrors)
              access tokens refreshed: \(reported.tokenRefreshes)
              sync errors reported to the app: \(syncErrors.isEmpty ? "none" : syncErrors)
              final drain: \(finalLine ?? "none")
              database: \(database.rows) rows, \(database.distinctSeq) distinct seq, \(database.distinctIds) distinct _id, \(database.transactions.count) transactions
              check: \(reported.committed.count - missing.count)/\(reported.committed.count) reported transactions present exactly once and whole, \(missing.count) missing, \(partial.count) partial, \(failedPresent.count) failed commits present, \(unreportedWhole) unreported (in flight at a kill) present whole
            """)

        #expect(problems.isEmpty, "\(problems)")
        #expect(finalLine?.hasPrefix("uploaded 0 0 ") == true, "the final drain: \(finalLine ?? "no answer")")
        #expect(reported.syncErrors["invalidSession"] == nil, "the server refused the client's refresh token")
        #expect(database.rows == database.distinctSeq, "duplicated objects in the sink")
        #expect(database.rows == database.distinctIds)
        #expect(missing.count == 0, "reported committed but not in the sink once and whole: \(missing.sorted().prefix(10))")
        #expect(partial.count == 0, "transactions only partly in the sink: \(partial.sorted().prefix(10))")
        #expect(failedPresent.count == 0, "failed commits in the sink: \(failedPresent.sorted().prefix(10))")
        #expect(reported.committedObjects > 0)
        // Each kind of event comes first once, so every run has all of them.
        if settings.seconds >= 30 {
            #expect(clientKills > 0 && serverKills > 0 && outages > 0 && diskFullEpisodes > 0)
        }
    }
}
