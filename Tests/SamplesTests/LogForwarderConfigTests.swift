#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestSupport
import IngestTestSupport

/// `--config FILE`: sources with their own formats, the server with an API
/// key, the store directory and limits from the file; flags over the file;
/// bad files refused naming the key (or the line).
extension LogForwarderTests {
    @Test func aConfigurationFileNamesSourcesServerStoreAndLimits() throws {
        let directory = try TemporaryDirectory("samples")
        // A configured server whose app takes API keys only.
        let server = try SampleServer(
            in: directory.path,
            config:
                #"{"stateDirectory": "\#(directory.path)/server-data", "apps": [{"id": "logs", "auth": {"api-key": {}}, "developmentMode": true}]}"#,
            appId: "logs")
        let forward = try builtExecutable("ingest-forward")
        let created = try runProcess(
            try builtExecutable("ingest-server"),
            ["apikey", "create", "--app", "logs", "--name", "forwarder", "--config", directory.path + "/ingest.json"], in: directory.path)
        #expect(created.status == 0, "\(created.errorOutput)")
        let key = created.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let etc = directory.path + "/etc"
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.path + "/logs", withIntermediateDirectories: true)
        var expected = (0..<30).map { "plain line \($0)" }
        try append(directory.path + "/logs/app.log", expected)
        try append(
            directory.path + "/logs/pod.cri",
            [criLine("container ", "stderr", partial: true), criLine("message", "stderr"), criLine("second")])
        expected += ["container message", "second"]
        let config = etc + "/ingest-forward.json"
        try Data(
            """
            {
              "server": {"url": "\(server.baseURL)", "appId": "\(server.appId)", "credentials": {"apiKey": "\(key)"}},
              "dataDir": "../state",
              "metricsFile": "../forward.prom",
              "sources": [
                {"paths": ["../logs/*.log"]},
                {"paths": ["\(directory.path)/logs/*.cri"], "format": "cri", "multiline": {"maxBytes": 4096, "timeout": 5}}
              ],
              "limits": {"batchLines": 10, "maxOpenFiles": 8, "maxPendingBytes": 100000000},
              "scanInterval": 2, "gzip": "skip"
            }
            """.utf8
        ).write(to: URL(fileURLWithPath: config))
        let first = try runProcess(forward, ["--config", config, "--once"], in: directory.path)
        #expect(first.status == 0, "\(first.errorOutput)")
        #expect(first.output.contains("forwarded 32 lines in 4 transactions"), "\(first.output)")
        // The store directory and the metrics file are where the file says, relative to it.
        #expect(FileManager.default.fileExists(atPath: directory.path + "/state/dataingest"))
        let metrics = (try? String(contentsOfFile: directory.path + "/forward.prom", encoding: .utf8)) ?? ""
        #expect(metrics.contains("\ningest_forward_lines_total 32\n"), "\(metrics)")
        expectExactlyOnce(server, expected)
        #expect(
            try server.query(
                "SELECT format || ' ' || json_extract(fields, '$.stream') FROM ForwardedLine WHERE message = 'container message'")
                == ["cri stderr"])
        #expect(try server.query("SELECT DISTINCT format FROM ForwardedLine WHERE message LIKE 'plain line %'") == ["plain"])

        // Flags win: FILE arguments replace the sources, --batch-lines the limit.
        let extra = directory.path + "/extra.jsonl"
        try append(extra, (0..<20).map { #"{"msg":"extra \#($0)"}"# })
        expected += (0..<20).map { "extra \($0)" }
        let second = try runProcess(
            forward, ["--config", config, "--once", "--batch-lines", "100", "--format", "json", extra], in: directory.path)
        #expect(second.status == 0, "\(second.errorOutput)")
        #expect(second.output.contains("forwarded 20 lines in 1 transactions"), "\(second.output)")
        expectExactlyOnce(server, expected)
    }

    @Test func aBadConfigurationFileIsRefusedNamingTheKey() throws {
        let directory = try TemporaryDirectory("samples")
        let forward = try builtExecutable("ingest-forward")
        let cases: [(String, String)] = [
            (
                #"{"sources": [{"paths": ["a.log"], "format": "xml"}]}"#,
                "sources[0].format: must be one of plain, json, syslog, docker, cri"
            ),
            (
                #"{"sources": [{"paths": ["a.log"], "multiline": {"start": "("}}]}"#,
                "sources[0].multiline.start: \"(\" is not a valid regular expression"
            ),
            (
                #"{"sources": [{"paths": ["a.log"], "multiline": {"start": "a", "continue": "b"}}]}"#,
                "sources[0].multiline: give \"start\" or \"continue\""
            ),
            (#"{"sources": [{"path": ["a.log"]}]}"#, "sources[0].paths: required"),
            (#"{"sources": [{"paths": ["a.log"]}], "limits": {"batchLine": 5}}"#, "limits.batchLine: unknown key"),
            (#"{"sources": [{"paths": ["a.log"]}], "limits": {"batchLines": 0}}"#, "limits.batchLines: 0 is out of range"),
            (#"{"server": {"url": "ftp://x"}, "sources": [{"paths": ["a.log"]}]}"#, "server.url: needs an http(s) URL"),
            (#"{"server": {"credentials": {"apiKey": "k", "jwt": "t"}}}"#, "server.credentials: give one of"),
            (#"{"poll": "yes"}"#, "poll: expected true or false, found a string"),
            ("{\n  \"sources\": [\n    {\"paths\": [\"a.log\"],}\n  ]\n}", "JSON syntax error at line 3, column 25"),
            (#"{"dataDir": "x"}"#, "has no sources, and no FILE was given"),
        ]
        for (index, (text, message)) in cases.enumerated() {
            let path = directory.path + "/bad\(index).json"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let result = try runProcess(forward, ["--app-id", "x", "--config", path], in: directory.path)
            #expect(result.status == 2, "\(text): \(result.status)")
            #expect(result.errorOutput.contains(message), "\(text): \(result.errorOutput)")
        }
    }
}
