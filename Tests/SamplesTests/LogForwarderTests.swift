#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestTestSupport

/// `ingest-forward` as a built binary against a real ingest-server: exact
/// line counts after restarts, rotation, truncation and kill -9.
@Suite struct LogForwarderTests {
    /// Appends `lines` to `path` (creating it).
    func append(_ path: String, _ lines: [String]) throws {
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
        try handle.close()
    }

    func count(_ server: SampleServer, _ sql: String = "SELECT count(*) FROM ForwardedLine") -> Int {
        Int((try? server.query(sql))?.first ?? "0") ?? 0
    }

    func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    func forwarder(_ server: SampleServer, _ directory: String, _ extra: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-forward"))
        process.arguments = ["--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory + "/forward"] + extra
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        return process
    }

    @Test func aRestartResumesAtTheCheckpointAndFormatsAreParsed() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/app.log"
        let common = ["--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward"]
        try append(log, (0..<1_000).map { "line \($0)" })
        let first = try runProcess(forward, common + ["--once", "--batch-lines", "100", log], in: directory.path)
        #expect(first.status == 0, "\(first.errorOutput)")
        #expect(first.output.contains("forwarded 1000 lines in 10 transactions"))
        try append(log, (1_000..<1_500).map { "line \($0)" })
        let second = try runProcess(forward, common + ["--once", log], in: directory.path)
        #expect(second.status == 0)
        #expect(second.output.contains("forwarded 500 lines"))
        #expect(count(server) == 1_500)
        #expect(count(server, "SELECT count(DISTINCT message) FROM ForwardedLine") == 1_500)
        // Each line's offset is where it starts in the file.
        let offsetOf1000 = (0..<1_000).reduce(0) { $0 + "line \($1)\n".utf8.count }
        #expect(try server.query("SELECT offset FROM ForwardedLine WHERE message = 'line 1000'") == [String(offsetOf1000)])

        // Standard input, JSON lines and syslog.
        let stdinFile = directory.path + "/input.txt"
        try append(stdinFile, [#"{"level":"ERROR","msg":"boom","ts":"2026-11-29T10:00:00Z","n":3,"ok":true}"#,
                               #"<34>1 2026-11-29T10:00:01.5Z host1 app 42 ID7 [ex@1 k="v"] hello 5424"#,
                               "<13>Nov 29 10:00:02 host2 sshd[99]: hello 3164"])
        let json = Process()
        json.executableURL = URL(fileURLWithPath: forward)
        json.arguments = common + ["--format", "json", "-"]
        json.standardInput = FileHandle(forReadingAtPath: stdinFile)
        json.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try json.run()
        json.waitUntilExit()
        #expect(json.terminationStatus == 0)
        #expect(try server.query("SELECT message || ' ' || json_extract(level, '$') || ' ' || json_extract(fields, '$.n') FROM ForwardedLine WHERE format = 'json'") == ["boom error 3"])
        let syslog = Process()
        syslog.executableURL = URL(fileURLWithPath: forward)
        syslog.arguments = common + ["--format", "syslog", "-"]
        syslog.standardInput = FileHandle(forReadingAtPath: stdinFile)
        syslog.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try syslog.run()
        syslog.waitUntilExit()
        #expect(syslog.terminationStatus == 0)
        #expect(try server.query("SELECT json_extract(fields, '$.appName') || ' ' || json_extract(fields, '$.procId') || ' ' || message FROM ForwardedLine WHERE format = 'rfc5424'") == ["app 42 hello 5424"])
        #expect(try server.query("SELECT json_extract(fields, '$.hostname') || ' ' || json_extract(fields, '$.appName') || ' ' || message FROM ForwardedLine WHERE format = 'rfc3164'") == ["host2 sshd hello 3164"])

        let usage = try runProcess(forward, ["--bogus"], in: directory.path)
        #expect(usage.status == 2)
        let missing = try runProcess(forward, common + ["--once", directory.path + "/none.log"], in: directory.path)
        #expect(missing.status == 1)
    }

    /// Syslog lines that crashed the forwarder, found while writing the
    /// `syslog` fuzz harness and confirmed by replaying them through it (the
    /// inputs are seeds in Fuzz/corpus/syslog): a PRI of `-1` or `-9` parsed
    /// as a negative number and made a negative severity index, a trap that
    /// killed the process. A PRI is digits only, so these lines (and `+5`)
    /// are plain lines now, forwarded like any other. Foundation's date
    /// formatter trapped on a timestamp holding a combining mark (found by
    /// the CI fuzzing pass): such a line is now forwarded without a timestamp.
    @Test func fuzzingFindsAreForwardedNotCrashing() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let input = directory.path + "/syslog.txt"
        try append(input, ["<-1>negative priority", "<-9>1 2026-11-29T10:00:01Z h a p m - negative 5424",
                           "<+5>plus sign", "<13>Nov 29 10:00:0\u{0317}h host3 app: combining mark in the time",
                           "<13>Nov 29 10:00:02 host2 sshd[99]: after the bad lines"])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-forward"))
        process.arguments = ["--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
                             "--format", "syslog", "-"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        process.standardInput = FileHandle(forReadingAtPath: input)
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(waitFor(60) { !process.isRunning })
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(try server.query("SELECT format || ' ' || message FROM ForwardedLine ORDER BY offset") == [
            "plain <-1>negative priority", "plain <-9>1 2026-11-29T10:00:01Z h a p m - negative 5424",
            "plain <+5>plus sign", "rfc3164 Nov 29 10:00:0\u{0317}h host3 app: combining mark in the time",
            "rfc3164 after the bad lines",
        ])
    }

    @Test func followsRotationAndTruncationWithExactCounts() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/app.log"
        try append(log, (0..<300).map { "first \($0)" })
        let process = try forwarder(server, directory.path, ["--batch-lines", "50", log])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(waitFor(60) { count(server) == 300 })
        // Rotation: the file is renamed and a new one created.
        #expect(rename(log, log + ".1") == 0)
        try append(log, (0..<200).map { "second file line \($0)" })
        #expect(waitFor(60) { count(server) == 500 })
        // Truncation: the same file emptied and written again (shorter).
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data((0..<50).map { "t\($0)\n" }.joined().utf8))
        try handle.close()
        #expect(waitFor(60) { count(server) == 550 })
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(count(server, "SELECT count(*) FROM ForwardedLine WHERE message LIKE 'first %'") == 300)
        #expect(count(server, "SELECT count(*) FROM ForwardedLine WHERE message LIKE 'second file line %'") == 200)
        #expect(count(server, "SELECT count(DISTINCT message) FROM ForwardedLine WHERE message LIKE 't%'") == 50)
        #expect(count(server) == 550)
    }

    @Test func killNineMidStreamThenRestartGivesExactCounts() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/big.log"
        let total = 30_000
        try append(log, (0..<total).map { "event number \($0) with some padding to make the line longer" })
        let checkpoint = directory.path + "/forward/checkpoint.json"
        var killedMidStream = 0
        for round in 0..<3 {
            let process = try forwarder(server, directory.path, ["--batch-lines", "100", "--once", log])
            // Kill it once it has committed part of the file (checkpoint past 0).
            _ = waitFor(30) {
                guard let data = FileManager.default.contents(atPath: checkpoint),
                      let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                      let offset = object["offset"] as? Int else { return false }
                return offset > (round + 1) * 200_000 || !process.isRunning
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killedMidStream += 1
            }
            process.waitUntilExit()
        }
        #expect(killedMidStream >= 1)
        let final = try runProcess(try builtExecutable("ingest-forward"), ["--app-id", server.appId, "--base-url", server.baseURL,
                                                                 "--data-dir", directory.path + "/forward", "--once", log], in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput)")
        #expect(count(server) == total)
        #expect(count(server, "SELECT count(DISTINCT message) FROM ForwardedLine") == total)
    }

    /// The checkpoint's crash window: the forwarder is killed (SIGKILL) right
    /// after a commit, before that commit's checkpoint is saved, twice. Each
    /// restart reads the lines of the lost checkpoint again with the same
    /// `_id`s (`<source id>:<offset>`), and the server keeps each line once.
    @Test func killNineBetweenCommitAndCheckpointStoresEachLineOnce() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/app.log"
        let total = 3_000
        try append(log, (0..<total).map { "line \($0)" })
        let common = ["--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
                      "--batch-lines", "100", "--once", log]
        let checkpointFile = directory.path + "/forward/checkpoint.json"
        func checkpointOffset() -> Int? {
            guard let data = FileManager.default.contents(atPath: checkpointFile),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            return object["offset"] as? Int
        }
        func start(ofLine n: Int) -> Int { (0..<n).reduce(0) { $0 + "line \($1)\n".utf8.count } }
        let kill = "INGEST_FORWARD_TEST_KILL_AFTER_COMMIT"

        // Killed after its 7th commit: lines 0..<700 committed, the checkpoint still at line 600.
        let first = try runProcess(forward, common, in: directory.path, environment: [kill: "7"])
        #expect(first.status == 128 + SIGKILL, "\(first.errorOutput)")
        #expect(checkpointOffset() == start(ofLine: 600))
        // Resumes at line 600; killed after its 5th commit: 600..<1100 committed, checkpoint at 1000.
        let second = try runProcess(forward, common, in: directory.path, environment: [kill: "5"])
        #expect(second.status == 128 + SIGKILL, "\(second.errorOutput)")
        #expect(checkpointOffset() == start(ofLine: 1_000))
        // Resumes at line 1000 and finishes: lines 600..<700 and 1000..<1100 were committed twice.
        let final = try runProcess(forward, common, in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput)")
        #expect(final.output.contains("forwarded 2000 lines"), "\(final.output)")
        #expect(checkpointOffset() == start(ofLine: total))
        #expect(waitFor(60) { count(server) == total })
        #expect(count(server) == total)
        #expect(count(server, "SELECT count(DISTINCT message) FROM ForwardedLine") == total)
        // Each row is its line at its own offset (the replayed ones too).
        var expected: Set<String> = []
        var offset = 0
        for n in 0..<total {
            expected.insert("line \(n)@\(offset)")
            offset += "line \(n)\n".utf8.count
        }
        #expect(Set(try server.query("SELECT message || '@' || \"offset\" FROM ForwardedLine")) == expected)
    }
}
