#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestSupport
import IngestTestSupport

/// Container logs (`--format docker`, `--format cri`): parts of one message
/// joined across reads and across kill -9, each message in the sink once.
extension LogForwarderTests {
    /// A Docker json-file line.
    func dockerLine(_ log: String, _ stream: String = "stdout", second: Int = 0) -> String {
        let escaped = log.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        return #"{"log":"\#(escaped)","stream":"\#(stream)","time":"2024-05-01T10:00:\#(String(format: "%02d", second)).123456789Z"}"#
    }

    /// A CRI line.
    func criLine(_ text: String, _ stream: String = "stdout", partial: Bool = false, second: Int = 0) -> String {
        "2024-05-01T10:00:\(String(format: "%02d", second)).987654321Z \(stream) \(partial ? "P" : "F") \(text)"
    }

    /// Docker: a message split by the daemon into three parts (the last with
    /// `\n`), its last part appended only after the first two were read;
    /// stdout and stderr kept apart in `fields.stream`, the time as `timestamp`.
    @Test func dockerJsonFileJoinsPartsAcrossReads() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/container-json.log"
        let long = String(repeating: "x", count: 3_000)
        try append(
            log,
            [
                dockerLine("hello from stdout\n"), dockerLine("an error\n", "stderr", second: 1),
                dockerLine("begin " + long), dockerLine(long),
            ])
        let process = try forwarder(server, directory.path, ["--format", "docker", "--multiline-timeout", "30", log])
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == 2 })
        usleep(500_000)  // the two parts are read, waiting for their last
        #expect(count(server) == 2)
        try append(log, [dockerLine(" end\n", second: 2), "not json at all", dockerLine("after\n", second: 3)])
        let joined = "begin " + long + long + " end"
        #expect(waitFor(60) { count(server) == 5 })
        stopAndExpectExactlyOnce(process, server, ["hello from stdout", "an error", joined, "not json at all", "after"])
        #expect(
            try server.query("SELECT json_extract(fields, '$.stream') FROM ForwardedLine WHERE message = 'an error'") == ["stderr"])
        #expect(try server.query("SELECT format FROM ForwardedLine WHERE message = 'not json at all'") == ["plain"])
        // The joined message starts where its first part does.
        let firstPart = [dockerLine("hello from stdout\n"), dockerLine("an error\n", "stderr", second: 1)]
            .reduce(0) { $0 + $1.utf8.count + 1 }
        #expect(try server.query("SELECT \"offset\" FROM ForwardedLine WHERE message = '\(joined)'") == [String(firstPart)])
        #expect(
            try server.query("SELECT format || ' ' || (timestamp IS NOT NULL) FROM ForwardedLine WHERE message = 'after'")
                == ["docker 1"])
    }

    /// CRI: a message whose `P` parts were read when the forwarder was
    /// killed with -9 (they were never committed), its `F` part written
    /// after: the restart reads it again from its first part and sends it
    /// once, whole. A line of the other stream between two parts sends the
    /// gathered parts as they are, marked `partial`.
    @Test func criPartialLinesSurviveKillNine() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/pod.log"
        try append(log, [criLine("first full line"), criLine("error line", "stderr"), criLine("part one, ", partial: true)])
        let process = try forwarder(server, directory.path, ["--format", "cri", "--multiline-timeout", "30", log])
        defer { reap(process, within: 0) }
        #expect(waitFor(60) { count(server) == 2 })
        try append(log, [criLine("part two, ", partial: true)])
        usleep(500_000)
        reap(process, within: 0)
        try append(log, [criLine("part three"), criLine("interrupted ", partial: true), criLine("by stderr", "stderr")])
        let second = try forwarder(server, directory.path, ["--format", "cri", "--multiline-timeout", "30", log])
        defer { reap(second, within: 0) }
        #expect(waitFor(60) { count(server) == 5 })
        stopAndExpectExactlyOnce(
            second, server, ["first full line", "error line", "part one, part two, part three", "interrupted ", "by stderr"])
        #expect(
            try server.query("SELECT json_extract(fields, '$.partial') FROM ForwardedLine WHERE message = 'interrupted '") == ["1"])
        #expect(
            try server.query(
                "SELECT json_extract(fields, '$.stream') || ' ' || (json_extract(fields, '$.partial') IS NULL) FROM ForwardedLine WHERE message = 'part one, part two, part three'"
            ) == ["stdout 1"])
        let offset = [criLine("first full line"), criLine("error line", "stderr")].reduce(0) { $0 + $1.utf8.count + 1 }
        #expect(try server.query("SELECT \"offset\" FROM ForwardedLine WHERE message LIKE 'part one%'") == [String(offset)])
    }

    /// Messages of one to four CRI parts in transactions of 7 lines, killed
    /// with -9 right after the 3rd and then the 5th commit (a message's
    /// parts often straddle a transaction), then run to the end; and a part
    /// longer than `--multiline-max-bytes` sent on its own, marked
    /// `partial`: every message once, whole.
    @Test func criPartsAcrossCommitsAndKillNineExactlyOnce() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/pod.log"
        var random = SplitMix64(seed: 5)
        var messages: [String] = []
        var lines: [String] = []
        for n in 0..<300 {
            let parts = Int(random.next() % 4) + 1
            let texts = (0..<parts).map { "m\(n)p\($0) " }
            messages.append(texts.joined())
            for (index, text) in texts.enumerated() {
                lines.append(criLine(text, n % 5 == 0 ? "stderr" : "stdout", partial: index < parts - 1, second: n % 60))
            }
        }
        let big = String(repeating: "b", count: 2_000)
        lines += [criLine(big, partial: true), criLine("tail of big")]
        messages += [big, "tail of big"]
        try append(log, lines)
        let common = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
            "--format", "cri", "--batch-lines", "7", "--multiline-max-bytes", "1000", "--once", log,
        ]
        let kill = "INGEST_FORWARD_TEST_KILL_AFTER_COMMIT"
        #expect(try runProcess(forward, common, in: directory.path, environment: [kill: "3"]).status == 128 + SIGKILL)
        #expect(try runProcess(forward, common, in: directory.path, environment: [kill: "5"]).status == 128 + SIGKILL)
        let final = try runProcess(forward, common, in: directory.path)
        #expect(final.status == 0, "\(final.errorOutput)")
        expectExactlyOnce(server, messages)
        #expect(
            try server.query(
                "SELECT count(*) FROM ForwardedLine WHERE json_extract(fields, '$.partial') IS NOT NULL") == ["2"])
    }

    /// Multiline rules apply to joined container messages: a stack trace a
    /// container wrote, one frame split into two CRI parts, is one event.
    @Test func multilineRulesApplyToJoinedContainerMessages() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let log = directory.path + "/pod.log"
        try append(
            log,
            [
                criLine("2026-12-02 10:00:00 ERROR request failed"), criLine("\tat Handler.run(Handler.java:10)"),
                criLine("\tat Thread.r", partial: true), criLine("un(Thread.java:1583)"), criLine("2026-12-02 10:00:01 INFO next"),
            ])
        let result = try runProcess(
            try builtExecutable("ingest-forward"),
            [
                "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward",
                "--format", "cri", "--multiline-continue", #"^\s"#, "--once", log,
            ], in: directory.path)
        #expect(result.status == 0, "\(result.errorOutput)")
        expectExactlyOnce(
            server,
            [
                "2026-12-02 10:00:00 ERROR request failed\n\tat Handler.run(Handler.java:10)\n\tat Thread.run(Thread.java:1583)",
                "2026-12-02 10:00:01 INFO next",
            ])
        #expect(try server.query("SELECT DISTINCT format || ' ' || json_extract(fields, '$.stream') FROM ForwardedLine") == ["cri stdout"])
    }
}
