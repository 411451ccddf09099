#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestSupport
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

    @Test func aRestartResumesFromTheStoreAndFormatsAreParsed() throws {
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
        try append(
            stdinFile,
            [
                #"{"level":"ERROR","msg":"boom","ts":"2026-11-29T10:00:00Z","n":3,"ok":true}"#,
                #"<34>1 2026-11-29T10:00:01.5Z host1 app 42 ID7 [ex@1 k="v"] hello 5424"#,
                "<13>Nov 29 10:00:02 host2 sshd[99]: hello 3164",
            ])
        let json = Process()
        json.executableURL = URL(fileURLWithPath: forward)
        json.arguments = common + ["--format", "json", "-"]
        json.standardInput = FileHandle(forReadingAtPath: stdinFile)
        json.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try json.run()
        #expect(reap(json, within: 60), "ingest-forward --format json - did not exit within 60 s")
        #expect(json.terminationStatus == 0)
        #expect(
            try server.query(
                "SELECT message || ' ' || json_extract(level, '$') || ' ' || json_extract(fields, '$.n') FROM ForwardedLine WHERE format = 'json'"
            ) == ["boom error 3"])
        let syslog = Process()
        syslog.executableURL = URL(fileURLWithPath: forward)
        syslog.arguments = common + ["--format", "syslog", "-"]
        syslog.standardInput = FileHandle(forReadingAtPath: stdinFile)
        syslog.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try syslog.run()
        #expect(reap(syslog, within: 60), "ingest-forward --format syslog - did not exit within 60 s")
        #expect(syslog.terminationStatus == 0)
        #expect(
            try server.query(
                "SELECT json_extract(fields, '$.appName') || ' ' || json_extract(fields, '$.procId') || ' ' || message FROM ForwardedLine WHERE format = 'rfc5424'"
            ) == ["app 42 hello 5424"])
        #expect(
            try server.query(
                "SELECT json_extract(fields, '$.hostname') || ' ' || json_extract(fields, '$.appName') || ' ' || message FROM ForwardedLine WHERE format = 'rfc3164'"
            ) == ["host2 sshd hello 3164"])

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
    /// formatter trapped on a timestamp holding a combining mark, and ICU
    /// under Foundation's ISO 8601 formatter divided by zero (SIGFPE) on a
    /// time with 130 fraction digits and no offset (both found by the CI
    /// fuzzing pass; the second is the seed `long-fraction`). Times are read
    /// without Foundation now; such lines are forwarded without a timestamp.
    @Test func fuzzingFindsAreForwardedNotCrashing() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let input = directory.path + "/syslog.txt"
        try append(
            input,
            [
                "<-1>negative priority", "<-9>1 2026-11-29T10:00:01Z h a p m - negative 5424",
                "<+5>plus sign", "<13>Nov 29 10:00:0\u{0317}h host3 app: combining mark in the time",
                "<34>1 2026-11-29T10:00:01.\(String(repeating: "3", count: 130))] host2 app 4 ID7 [e] long fraction",
                "<13>Nov 29 10:00:02 host2 sshd[99]: after the bad lines",
            ])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-forward"))
        process.arguments = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
            "--format", "syslog", "-",
        ]
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        process.standardInput = FileHandle(forReadingAtPath: input)
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        defer { reap(process, within: 0) }
        #expect(reap(process, within: 60), "ingest-forward - did not exit within 60 s")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(
            try server.query("SELECT format || ' ' || message FROM ForwardedLine ORDER BY offset") == [
                "plain <-1>negative priority", "plain <-9>1 2026-11-29T10:00:01Z h a p m - negative 5424",
                "plain <+5>plus sign", "rfc3164 Nov 29 10:00:0\u{0317}h host3 app: combining mark in the time",
                "rfc5424 long fraction", "rfc3164 after the bad lines",
            ])
    }

    @Test func followsRotationAndTruncationWithExactCounts() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/app.log"
        try append(log, (0..<300).map { "first \($0)" })
        let process = try forwarder(server, directory.path, ["--batch-lines", "50", log])
        defer { reap(process, within: 0) }
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
        #expect(reap(process, within: 60), "ingest-forward did not stop within 60 s of SIGTERM")
        #expect(process.terminationStatus == 0)
        #expect(count(server, "SELECT count(*) FROM ForwardedLine WHERE message LIKE 'first %'") == 300)
        #expect(count(server, "SELECT count(*) FROM ForwardedLine WHERE message LIKE 'second file line %'") == 200)
        #expect(count(server, "SELECT count(DISTINCT message) FROM ForwardedLine WHERE message LIKE 't%'") == 50)
        #expect(count(server) == 550)
    }

    /// Every line of `lines` (text) is in the sink exactly once, and nothing else.
    func expectExactlyOnce(_ server: SampleServer, _ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(waitFor(60) { count(server) >= lines.count }, sourceLocation: sourceLocation)
        let rows = (try? server.query("SELECT message FROM ForwardedLine")) ?? []
        #expect(rows.count == lines.count, "rows \(rows.count), lines \(lines.count)", sourceLocation: sourceLocation)
        let missing = Set(lines).subtracting(rows).sorted()
        let unexpected = Set(rows).subtracting(lines).sorted()
        #expect(
            missing.isEmpty && unexpected.isEmpty,
            "missing \(missing.count) \(missing.prefix(3)), unexpected \(unexpected.count) \(unexpected.prefix(3))",
            sourceLocation: sourceLocation)
        let distinct = Set(rows).count
        #expect(distinct == rows.count, "\(rows.count - distinct) duplicates", sourceLocation: sourceLocation)
    }

    /// Stops the forwarder with SIGTERM (a clean stop, exit 0), then checks the sink.
    func stopAndExpectExactlyOnce(
        _ process: Process, _ server: SampleServer, _ lines: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        kill(process.processIdentifier, SIGTERM)
        #expect(reap(process, within: 60), "ingest-forward did not stop within 60 s of SIGTERM", sourceLocation: sourceLocation)
        #expect(process.terminationStatus == 0, sourceLocation: sourceLocation)
        expectExactlyOnce(server, lines, sourceLocation: sourceLocation)
    }

    /// `kill -9` at random moments (seeded) while the forwarder reads a file
    /// that is still being appended to, then a last run: each line in the
    /// sink exactly once, by content. `INGEST_FORWARD_KILL_ROUNDS` sets the
    /// rounds (default 4).
    @Test func killNineAtRandomPointsThenRestartStoresEachLineOnce() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/big.log"
        let rounds = Int(ProcessInfo.processInfo.environment["INGEST_FORWARD_KILL_ROUNDS"] ?? "") ?? 4
        var random = SplitMix64(seed: 20)
        var lines: [String] = []
        func more(_ n: Int) throws {
            let next = (lines.count..<(lines.count + n)).map { "event number \($0) with some padding to make the line longer" }
            lines += next
            try append(log, next)
        }
        try more(20_000)
        var killed = 0
        for _ in 0..<rounds {
            let process = try forwarder(server, directory.path, ["--batch-lines", "100", "--once", log])
            usleep(UInt32(150_000 + random.next() % 1_200_000))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            }
            #expect(reap(process, within: 60), "ingest-forward did not end within 60 s")
            try more(2_000)
        }
        #expect(killed >= 1)
        let final = try runProcess(
            try builtExecutable("ingest-forward"),
            [
                "--app-id", server.appId, "--base-url", server.baseURL,
                "--data-dir", directory.path + "/forward", "--once", log,
            ], in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/forward/checkpoint.json"))
        expectExactlyOnce(server, lines)
    }

    /// The crash window of the old checkpoint file is gone: the forwarder
    /// kills itself (SIGKILL) right after a commit, and the restart resumes
    /// exactly after that commit's lines, because their position was in the
    /// same store transaction: nothing is read or committed twice.
    @Test func killNineRightAfterACommitResendsNothing() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/app.log"
        let total = 3_000
        let lines = (0..<total).map { "line \($0)" }
        try append(log, lines)
        let common = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
            "--batch-lines", "100", "--once", log,
        ]
        let kill = "INGEST_FORWARD_TEST_KILL_AFTER_COMMIT"
        let first = try runProcess(forward, common, in: directory.path, environment: [kill: "7"])
        #expect(first.status == 128 + SIGKILL, "\(first.errorOutput)")
        let second = try runProcess(forward, common, in: directory.path, environment: [kill: "5"])
        #expect(second.status == 128 + SIGKILL, "\(second.errorOutput)")
        let final = try runProcess(forward, common, in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput)")
        // 700 + 500 lines committed by the killed runs, the rest now: none twice.
        #expect(final.output.contains("forwarded 1800 lines in 18 transactions"), "\(final.output)")
        expectExactlyOnce(server, lines)
        var expected: Set<String> = []
        var offset = 0
        for n in 0..<total {
            expected.insert("line \(n)@\(offset)")
            offset += "line \(n)\n".utf8.count
        }
        #expect(Set(try server.query("SELECT message || '@' || \"offset\" FROM ForwardedLine")) == expected)
    }

    /// `kill -9` at each step of a line's way through the forwarder: read
    /// but not committed (the seam kills it right before its 4th commit),
    /// committed but not uploaded (right after its 3rd commit, the server
    /// frozen so nothing is uploaded), and uploaded but not acknowledged (the
    /// server frozen with SIGSTOP while the forwarder's uploads wait on it,
    /// then resumed after the kill, so it may store what no one hears
    /// about). Each next run resumes from the store; every line once.
    @Test func killNineAtEachStepBetweenReadingCommittingAndUploading() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/app.log"
        var lines: [String] = []
        func more(_ n: Int) throws {
            let next = (lines.count..<(lines.count + n)).map { "step line \($0)" }
            lines += next
            try append(log, next)
        }
        let common = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
            "--batch-lines", "100", "--upload-timeout", "2", "--once", log,
        ]
        // Read, not committed: 3 transactions of 100 committed, the 4th's lines lost with the process.
        try more(1_000)
        let beforeCommit = try runProcess(forward, common, in: directory.path, environment: ["INGEST_FORWARD_TEST_KILL_BEFORE_COMMIT": "4"])
        #expect(beforeCommit.status == 128 + SIGKILL, "\(beforeCommit.errorOutput)")
        // Committed, not uploaded: the server frozen, the forwarder killed right after its 3rd commit.
        try more(500)
        let storedBeforeFreezing = count(server)
        kill(server.pid, SIGSTOP)
        let afterCommit = try runProcess(forward, common, in: directory.path, environment: ["INGEST_FORWARD_TEST_KILL_AFTER_COMMIT": "3"])
        #expect(afterCommit.status == 128 + SIGKILL, "\(afterCommit.errorOutput)")
        // Uploaded, not acknowledged: still frozen, the next run commits the rest and its uploads
        // wait on the server; it is killed, then the server resumes and answers no one.
        try more(500)
        let frozen = try forwarder(server, directory.path, ["--batch-lines", "100", "--upload-timeout", "120", "--once", log])
        let store = directory.path + "/forward"
        func sealedSegments() -> Int {
            (FileManager.default.subpaths(atPath: store) ?? []).filter { $0.hasSuffix(".seg.gz") }.count
        }
        #expect(waitFor(60) { sealedSegments() > 0 })
        usleep(1_000_000)  // the uploads are sent and wait for their answers
        kill(frozen.processIdentifier, SIGKILL)
        #expect(reap(frozen, within: 30))
        kill(server.pid, SIGCONT)
        // The upload the killed run sent is read and stored now, answered to no one.
        #expect(waitFor(30) { count(server) > storedBeforeFreezing }, "nothing of the upload sent to the frozen server was stored")
        // The last run: what was left uploads once; nothing twice.
        let final = try runProcess(forward, common, in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput)")
        expectExactlyOnce(server, lines)
    }

    /// Rotation while the forwarder is stopped: the rest of the rotated file
    /// is read from its new name (found by inode and fingerprint), then from
    /// a `.gz` it was compressed into (found by fingerprint), and the new
    /// file from its start. `--gzip skip` never opens a `.gz`.
    @Test func rotationWhileStoppedLosesNothingAlsoIntoGzip() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/app.log"
        let common = ["--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward", "--once"]
        func run(_ extra: [String] = [], _ paths: [String] = [log]) throws -> ProcessResult {
            let result = try runProcess(forward, common + extra + paths, in: directory.path)
            #expect(result.status == 0, "\(result.errorOutput)")
            return result
        }
        var lines: [String] = []
        func write(_ path: String, _ prefix: String, _ n: Int) throws {
            let next = (0..<n).map { "\(prefix) line \($0) of the generation, padded to a realistic length" }
            lines += next
            try append(path, next)
        }
        try write(log, "first", 300)
        _ = try run()
        try write(log, "first-unread", 100)  // written, then rotated before it was read
        #expect(rename(log, log + ".1") == 0)
        try write(log, "second", 50)
        #expect(try run().output.contains("forwarded 150 lines"))
        try write(log, "second-unread", 30)
        #expect(rename(log, log + ".1") == 0)  // replaces the first file's .1
        let rotated = [UInt8](FileManager.default.contents(atPath: log + ".1")!)
        _ = FileManager.default.createFile(atPath: log + ".1.gz", contents: Data(try Gzip.compress(rotated)))
        try FileManager.default.removeItem(atPath: log + ".1")
        try write(log, "third", 20)
        #expect(try run().output.contains("forwarded 50 lines"))
        #expect(try run().output.contains("forwarded 0 lines"))
        // A glob that matches the .gz reads nothing again from it.
        #expect(try run([], [directory.path + "/app.log*"]).output.contains("forwarded 0 lines"))
        // --gzip skip: a new .gz is left alone.
        let other = directory.path + "/other.log.gz"
        _ = FileManager.default.createFile(atPath: other, contents: Data(try Gzip.compress(Array("skipped\n".utf8))))
        #expect(try run(["--gzip", "skip"], [directory.path + "/*.gz"]).output.contains("forwarded 0 lines"))
        expectExactlyOnce(server, lines)
    }

    /// While it runs, over a glob with at most 2 files open: new files are
    /// picked up, copy-and-truncate and a file deleted and created again
    /// (which may reuse the inode) are read as new generations, a renamed
    /// file is read to its end; every line once.
    @Test func manyFilesRotationTruncationAndInodeReuseWhileRunning() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let logs = directory.path + "/logs"
        try FileManager.default.createDirectory(atPath: logs + "/sub", withIntermediateDirectories: true)
        var lines: [String] = []
        func write(_ name: String, _ prefix: String, _ n: Int) throws {
            let next = (0..<n).map { "\(prefix) \(name) line \($0) with padding to make it longer than the fingerprint" }
            lines += next
            try append(logs + "/" + name, next)
        }
        for name in ["a.log", "b.log", "c.log", "d.log", "sub/e.log"] { try write(name, "start", 100) }
        try write("ignored.txt", "never", 0)
        let process = try forwarder(server, directory.path, ["--batch-lines", "50", "--max-open-files", "2", logs + "/**/*.log"])
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == 500 })
        try write("sub/new.log", "new", 100)  // a new file matching the glob
        try write("a.log", "more", 10)  // an idle (closed) file grows
        #expect(waitFor(60) { count(server) == 610 })
        // Copy and truncate: a.log copied away (not matching), emptied, written again.
        try FileManager.default.copyItem(atPath: logs + "/a.log", toPath: logs + "/a.log.1")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logs + "/a.log"))
        try handle.truncate(atOffset: 0)
        try handle.close()
        try write("a.log", "after-truncate", 40)
        // Deleted and created again: often the same inode, always new content.
        try FileManager.default.removeItem(atPath: logs + "/b.log")
        try write("b.log", "reborn", 30)
        // Rotation by rename.
        #expect(rename(logs + "/c.log", logs + "/c.log.old") == 0)
        try write("c.log", "rotated", 25)
        #expect(waitFor(60) { count(server) == 705 })
        usleep(1_500_000)  // a scan or two more: nothing else may arrive
        stopAndExpectExactlyOnce(process, server, lines)
    }

    /// Many files under one `**` glob with at most 16 open at once, each
    /// appended to again once all were read: every line once.
    /// `INGEST_FORWARD_FILES` sets the number of files (default 60; the
    /// issue's figure is 10,000).
    @Test func manyFilesWithABoundOnOpenFiles() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let files = Int(ProcessInfo.processInfo.environment["INGEST_FORWARD_FILES"] ?? "") ?? 60
        var lines: [String] = []
        for n in 0..<files {
            let path = directory.path + "/logs/d\(n % 10)/f\(n).log"
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let next = (0..<3).map { "file \(n) line \($0)" }
            lines += next
            try append(path, next)
        }
        let process = try forwarder(server, directory.path, ["--max-open-files", "16", directory.path + "/logs/**/*.log"])
        defer { reap(process, within: 0) }
        #expect(waitFor(120) { count(server) == lines.count })
        // Open descriptors stay bounded (16 files, plus the store's and the runtime's).
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? 0
        #expect(descriptors < 16 + 40, "\(descriptors) open descriptors")
        for n in 0..<files {
            let next = ["file \(n) appended"]
            lines += next
            try append(directory.path + "/logs/d\(n % 10)/f\(n).log", next)
        }
        #expect(waitFor(120) { count(server) == lines.count })
        stopAndExpectExactlyOnce(process, server, lines)
    }

    /// Multiline events (Java stack traces after a timestamped first line),
    /// one across a rotation: its last continuation line is written to the
    /// renamed file. The last event of a quiet file is sent after the
    /// timeout; each event once, whole.
    @Test func multilineEventsAlsoAcrossARotation() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/app.log"
        func event(_ n: Int) -> [String] {
            [
                "2026-12-02 10:00:\(n % 60) ERROR request \(n) failed", "java.lang.IllegalStateException: boom \(n)",
                "\tat com.example.Handler.run(Handler.java:\(n))", "\tat java.base/java.lang.Thread.run(Thread.java:1583)",
            ]
        }
        var events = (0..<50).map(event)
        try append(log, events.flatMap { $0 })
        let process = try forwarder(
            server, directory.path, ["--multiline-start", #"^\d{4}-\d{2}-\d{2} "#, "--multiline-timeout", "0.5", log])
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == 50 })
        let split = event(50)
        try append(log, Array(split.prefix(2)))
        usleep(200_000)
        #expect(rename(log, log + ".1") == 0)
        try append(log + ".1", Array(split.suffix(2)))  // the writer still had the old file open
        events.append(split)
        let after = (51..<60).map(event)
        events += after
        try append(log, after.flatMap { $0 })
        #expect(waitFor(60) { count(server) == 60 })
        usleep(1_200_000)
        stopAndExpectExactlyOnce(process, server, events.map { $0.joined(separator: "\n") })
    }

    /// A full store (its disk budget, while the server is down) stops the
    /// reading instead of dropping lines: the store stays within its budget,
    /// the forwarder says so (on standard error and as the gauge
    /// `ingest_forward_reading_paused` in its metrics file) and stops
    /// cleanly; the next run, with the server back, delivers every line once.
    @Test func aFullStoreBlocksReadingAndLosesNothing() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/app.log"
        var lines = (0..<200).map { "before the outage \($0)" }
        try append(log, lines)
        let errors = directory.path + "/forward.err"
        let output = directory.path + "/forward.out"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let common = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
            "--max-retry-delay", "1", "--batch-lines", "200",
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-forward"))
        let metrics = directory.path + "/forward.prom"
        process.arguments = common + ["--max-pending-bytes", "60000", "--upload-timeout", "1", "--metrics-file", metrics, log]
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == 200 })
        func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        #expect(waitFor(10) { text(metrics).contains("\ningest_forward_reading_paused 0\n") }, "\(text(metrics))")
        server.kill9()
        let outage = (0..<3_000).map { "during the outage \($0) with padding to fill the store faster" }
        lines += outage
        try append(log, outage)
        #expect(waitFor(60) { text(errors).contains("the store is full") }, "\(text(errors))")
        #expect(waitFor(10) { text(metrics).contains("\ningest_forward_reading_paused 1\n") }, "\(text(metrics))")
        #expect(text(metrics).contains("# TYPE dataingest_store_pending_bytes gauge"), "\(text(metrics))")
        // The budget holds: sealed plus active bytes stay within it (plus one commit).
        let store = try FileManager.default.subpathsOfDirectory(atPath: directory.path + "/forward/dataingest")
            .first { $0.hasSuffix("/store") }.map { directory.path + "/forward/dataingest/" + $0 }
        usleep(1_500_000)
        kill(process.processIdentifier, SIGTERM)
        #expect(reap(process, within: 60), "ingest-forward did not stop within 60 s of SIGTERM")
        #expect(process.terminationReason == .exit)  // stopped cleanly
        #expect(text(output).contains("by a full store"), "\(text(output))")
        if let store {
            let pending = ((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).filter { $0.hasSuffix(".seg.gz") }
                .reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: store + "/" + $1)[.size] as? Int) ?? 0) }
            #expect(pending <= 60_000 + 20_000, "\(pending) sealed bytes")
        }
        try server.restart()
        // With room again (a larger budget), the rest follows, once.
        let final = try runProcess(try builtExecutable("ingest-forward"), common + ["--once", log], in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput) SERVER \(server.logText.suffix(3000))")
        expectExactlyOnce(server, lines)
    }
}
