#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestTestSupport
@testable import DataIngest
import IngestSupport

/// Issue 18, items 1 and 2: the seed page's program (`Tests/Support/seed-program`,
/// the page's code exactly but for `import DataIngest`) run as a command-line
/// process, as a new user runs it: it writes one `WeatherSensor` and `main`
/// returns. The exit grace period (`App.Configuration.exitUploadGracePeriod`)
/// delivers the object before the process ends; a run with the grace period
/// off leaves it on disk for the next run; a first start without a server
/// records all the same and the next run with a server delivers it.
@Suite(.serialized) struct SeedProgramTests {
    /// One run of the seed program in `directory` (its metadata goes to
    /// `./dataingest-metadata`, App.Configuration's default), bounded in time.
    struct Run {
        var status: Int32
        var seconds: Double
        var output: String
    }

    func runSeedProgram(
        in directory: String, appId: String, baseURL: URL,
        environment extra: [String: String] = [:], timeout: Double = 60
    ) throws -> Run {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: try builtExecutable("seed-program"))
        child.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        environment["APP_ID"] = appId
        environment["DATAINGEST_BASE_URL"] = baseURL.absoluteString
        environment["DATAINGEST_METADATA_DIRECTORY"] = nil
        environment["DATAINGEST_EXIT_UPLOAD_GRACE_SECONDS"] = nil
        for (key, value) in extra { environment[key] = value }
        child.environment = environment
        let outputPath = directory + "/seed-program-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        child.standardOutput = FileHandle(forWritingAtPath: outputPath)
        child.standardError = child.standardOutput
        let started = monotonicNow()
        try child.run()
        _ = eventually(timeout: timeout) { !child.isRunning }
        reap(child, within: 0)
        let seconds = monotonicNow() - started
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Run(status: child.terminationStatus, seconds: seconds, output: output)
    }

    /// Segment files (active or sealed) the program left in its stores.
    func pendingFiles(in directory: String) -> [String] {
        let root = directory + "/dataingest-metadata"
        let enumerator = FileManager.default.enumerator(atPath: root)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if path.hasSuffix(".active") || path.hasSuffix(".seg.gz") { found.append(path) }
        }
        return found
    }

    @Test func theSeedsProgramDeliversItsObjectWhenMainReturns() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let run = try runSeedProgram(in: directory.path, appId: appId, baseURL: server.baseURL)
        #expect(run.status == 0, "\(run.output)")
        #expect(!run.output.contains("Error"), "\(run.output)")
        // Delivered within seconds of the exit (in fact before it).
        #expect(eventually(timeout: 3) { server.count(appId, "WeatherSensor") == 1 })
        #expect(try server.queryText(appId, "SELECT deviceId FROM WeatherSensor") == ["WX1278UIT"])
        #expect(pendingFiles(in: directory.path) == [])
        #expect(run.seconds < 20, "the run took \(run.seconds) s")
    }

    @Test func aLaterRunUploadsWhatARunWithoutGracePeriodLeft() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        // Zero opts out: the object stays on disk, nothing waits at exit.
        let first = try runSeedProgram(
            in: directory.path, appId: appId, baseURL: server.baseURL,
            environment: ["DATAINGEST_EXIT_UPLOAD_GRACE_SECONDS": "0"])
        #expect(first.status == 0, "\(first.output)")
        #expect(server.count(appId, "WeatherSensor") == 0)
        #expect(!pendingFiles(in: directory.path).isEmpty)
        let second = try runSeedProgram(in: directory.path, appId: appId, baseURL: server.baseURL)
        #expect(second.status == 0, "\(second.output)")
        #expect(eventually(timeout: 3) { server.count(appId, "WeatherSensor") == 2 })
        #expect(pendingFiles(in: directory.path) == [])
    }

    @Test func aFirstStartWithoutServerRecordsAndTheNextRunDelivers() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        server.kill9()  // nothing listens on its port now
        let offline = try runSeedProgram(in: directory.path, appId: appId, baseURL: server.baseURL)
        #expect(offline.status == 0, "\(offline.output)")
        #expect(!offline.output.contains("Error"), "the seed's code path must work offline: \(offline.output)")
        // No server to wait for: the exit does not sit out the grace period.
        #expect(offline.seconds < 4, "the offline run took \(offline.seconds) s")
        #expect(!pendingFiles(in: directory.path).isEmpty)
        try server.restart()
        let online = try runSeedProgram(in: directory.path, appId: appId, baseURL: server.baseURL)
        #expect(online.status == 0, "\(online.output)")
        #expect(eventually(timeout: 3) { server.count(appId, "WeatherSensor") == 2 })
        #expect(pendingFiles(in: directory.path) == [])
    }

    /// The program is the seed page's code: every line of its main.swift but
    /// the import is a line of the page, in the page's order.
    @Test func theProgramIsTheSeedPagesCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        // The seed page lies next to the checkout (../shared/seed/), or where SEED_PAGE says.
        let seed =
            ProcessInfo.processInfo.environment["SEED_PAGE"].map { URL(fileURLWithPath: $0) }
            ?? root.deletingLastPathComponent().appendingPathComponent("shared/seed/000_380bdd6d56946379.txt")
        guard let page = try? String(contentsOf: seed, encoding: .utf8) else {
            // Not there: nothing to compare, except under CI, whose machines have it.
            #expect(!TestEnvironment.isCI, "the seed page is missing at \(seed.path)")
            return
        }
        let program = try String(contentsOf: root.appendingPathComponent("Tests/Support/seed-program/main.swift"), encoding: .utf8)
        var lines = program.split(separator: "\n").map(String.init)
        #expect(lines.removeFirst() == "import DataIngest")
        let pageLines = page.split(separator: "\n").map(String.init)
        var position = 0
        for line in lines {
            guard let found = pageLines[position...].firstIndex(of: line) else {
                Issue.record("not a line of the seed page (in order): \(line)")
                return
            }
            position = found + 1
        }
    }
}

/// Issue 18, item 1: a process that exits while a segment is being sealed
/// leaves nothing a later run misreads.
@Suite(.serialized) struct ExitWhileSealingTests {
    @Test func aLaterRunDeliversEverythingOnceAfterAnExitInTheMiddleOfASeal() throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        func child(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let (process, out) = try startSyncClientChild(arguments, in: directory.path, server: server, appId: appId)
            var lines: [String] = []
            while true {
                let line = try readLine(out.fileHandleForReading.fileDescriptor, timeout: 60)
                if line.isEmpty { break }
                lines.append(line)
            }
            _ = eventually(timeout: 30) { !process.isRunning }
            reap(process, within: 0)
            return (process.terminationStatus, lines.joined(separator: "\n"))
        }
        // 3,000 readings in transactions of 100, then exit(0) while the sealer
        // has written N.seg.gz.tmp and not yet renamed it; the exit grace
        // period (1 s here) ends although the seal never finishes.
        let first = try child(["exit-while-sealing", "3000"])
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("sealing"), "\(first.output)")
        let enumerator = FileManager.default.enumerator(atPath: directory.path + "/dataingest-metadata")
        var left: [String] = []
        while let path = enumerator?.nextObject() as? String { left.append(path) }
        #expect(left.contains { $0.hasSuffix(".seg.gz.tmp") }, "\(left)")
        #expect(left.contains { $0.hasSuffix(".active") }, "\(left)")
        // The next run (the same user, restored) uploads everything once.
        let second = try child(["drain"])
        #expect(second.status == 0, "\(second.output)")
        try server.expectExactlyOnce(appId, table: "Reading", count: 3000)
    }
}
