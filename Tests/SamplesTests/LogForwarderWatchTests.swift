#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestSupport
import IngestTestSupport

/// inotify wakes the forwarder: with patterns scanned only every 30 s, an
/// appended line, a new file and a rotation are still forwarded at once;
/// `--poll` still forwards appended lines (every 100 ms).
extension LogForwarderTests {
    /// Starts the forwarder with `extra`, its output to `directory/forward.out`.
    func watchingForwarder(_ server: SampleServer, _ directory: String, _ extra: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-forward"))
        process.arguments = ["--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory + "/forward"] + extra
        let output = directory + "/forward.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        return process
    }

    /// Appends one line at a time to `path` and measures how long each
    /// takes to reach the sink (seconds, sorted).
    func appendLatencies(_ server: SampleServer, _ path: String, _ prefix: String, _ n: Int) throws -> [Double] {
        var latencies: [Double] = []
        for index in 0..<n {
            let before = count(server)
            let start = monotonicNow()
            try append(path, ["\(prefix) \(index)"])
            #expect(waitFor(20) { count(server) > before })
            latencies.append(monotonicNow() - start)
        }
        return latencies.sorted()
    }

    @Test func inotifyForwardsAppendsNewFilesAndRotationAtOnce() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let logs = directory.path + "/logs"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        var lines = (0..<10).map { "existing \($0)" }
        try append(logs + "/a.log", lines)
        let process = try watchingForwarder(server, directory.path, ["--scan-interval", "30", logs + "/*.log"])
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == lines.count })
        let latencies = try appendLatencies(server, logs + "/a.log", "appended", 10)
        lines += (0..<10).map { "appended \($0)" }
        print("inotify: append to sink, median \(latencies[5]) s, max \(latencies[9]) s")
        // Waiting for the 30 s scan would take far longer than these bounds.
        #expect(latencies[5] < 5, "\(latencies)")
        // A new file: its creation wakes a scan.
        var start = monotonicNow()
        try append(logs + "/b.log", ["new file line"])
        lines.append("new file line")
        #expect(waitFor(20) { count(server) == lines.count })
        let created = monotonicNow() - start
        // Rotation by rename: the new file at the path, read from its start.
        start = monotonicNow()
        #expect(rename(logs + "/a.log", logs + "/a.log.1") == 0)
        try append(logs + "/a.log", ["after rotation"])
        lines.append("after rotation")
        #expect(waitFor(20) { count(server) == lines.count })
        let rotated = monotonicNow() - start
        print("inotify: new file to sink \(created) s, rotation to sink \(rotated) s")
        #expect(created < 10 && rotated < 10, "created \(created) s, rotated \(rotated) s")
        stopAndExpectExactlyOnce(process, server, lines)
        let summary = (try? String(contentsOfFile: directory.path + "/forward.out", encoding: .utf8)) ?? ""
        #expect(summary.contains("; inotify woke"), "\(summary)")
    }

    @Test func pollStillForwardsAppendedLines() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/app.log"
        var lines = (0..<10).map { "existing \($0)" }
        try append(log, lines)
        let process = try watchingForwarder(server, directory.path, ["--poll", "--scan-interval", "30", log])
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == lines.count })
        let latencies = try appendLatencies(server, log, "appended", 10)
        lines += (0..<10).map { "appended \($0)" }
        print("--poll: append to sink, median \(latencies[5]) s, max \(latencies[9]) s")
        #expect(latencies[5] < 5, "\(latencies)")
        stopAndExpectExactlyOnce(process, server, lines)
        let summary = (try? String(contentsOfFile: directory.path + "/forward.out", encoding: .utf8)) ?? ""
        #expect(summary.contains("; polling (--poll)"), "\(summary)")
    }

    /// The watch limit reached (simulated: `INGEST_FORWARD_TEST_MAX_WATCHES=2`
    /// makes the third watch fail with ENOSPC, as the kernel's
    /// `fs.inotify.max_user_watches` would): the forwarder says so, polls,
    /// and still forwards every line of the three directories once.
    @Test func theWatchLimitFallsBackToPolling() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        var lines: [String] = []
        for name in ["a", "b", "c"] {
            try FileManager.default.createDirectory(atPath: directory.path + "/logs/\(name)", withIntermediateDirectories: true)
            let next = (0..<5).map { "\(name) line \($0)" }
            lines += next
            try append(directory.path + "/logs/\(name)/app.log", next)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-forward"))
        process.arguments = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
            directory.path + "/logs/*/*.log",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(["INGEST_FORWARD_TEST_MAX_WATCHES": "2"]) { _, new in new }
        let output = directory.path + "/forward.out"
        let errors = directory.path + "/forward.err"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == lines.count })
        for name in ["a", "b", "c"] {
            let next = ["\(name) appended while polling"]
            lines += next
            try append(directory.path + "/logs/\(name)/app.log", next)
        }
        #expect(waitFor(60) { count(server) == lines.count })
        stopAndExpectExactlyOnce(process, server, lines)
        func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        #expect(
            text(errors).contains("the inotify watch limit is reached (fs.inotify.max_user_watches); polling the files instead"),
            "\(text(errors))")
        #expect(text(output).contains("; polling (the inotify watch limit is reached"), "\(text(output))")
    }
}
