#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestTestSupport
import Testing

/// `ingest-server`'s command line, run as the built binary: help, usage
/// errors (exit 2), start-up failures (exit 1), a graceful stop (exit 0 with
/// `stopped`), the log level from the flag, the environment and the file,
/// and the completion script.
@Suite("ingest-server: command line")
struct ServerCommandLineTests {
    @Test("--help lists every flag and the apikey subcommand, on standard output, exit 0")
    func help() throws {
        let result = try runIngestServer(["--help"])
        #expect(result.status == 0)
        for flag in [
            "--config", "--data-dir", "--host", "--port", "--workers", "--max-connections", "--max-header-bytes",
            "--max-body-bytes", "--max-inflated-bytes", "--max-inflate-ratio", "--max-concurrent-uploads",
            "--synchronous", "--sqlite-page-size", "--sink-busy-timeout", "--header-timeout", "--body-timeout", "--keep-alive-timeout",
            "--write-timeout", "--shutdown-grace", "--sync-idle-timeout", "--enable-test-routes", "--log-level", "apikey",
        ] {
            #expect(result.output.contains(flag), "\(flag) is missing from --help")
        }
        #expect(try runIngestServer(["-h"]).output == result.output)
        let apikey = try runIngestServer(["apikey", "create", "--help"])
        #expect(apikey.status == 0 && apikey.output.contains("--name") && apikey.output.contains("--app"))
    }

    @Test("invalid flags and values are usage errors: exit 2, the problem and the usage on standard error")
    func usageErrors() throws {
        let directory = try TemporaryDirectory("e2e")
        for arguments in [
            ["--bogus"], ["--port"], ["--port", "70000"], ["--port", "x"], ["--workers", "0"],
            ["--max-header-bytes", "100"], ["--synchronous", "SLOW"], ["--header-timeout", "0"],
            ["--sqlite-page-size", "1000"], ["--sqlite-page-size", "131072"], ["--sqlite-page-size", "x"],
            ["--shutdown-grace", "-1"], ["--sync-idle-timeout", "0"], ["--body-timeout", "inf"], ["--log-level", "loud"], ["extra"],
        ] {
            let result = try runIngestServer(arguments + ["--data-dir", directory.path + "/data"])
            #expect(result.status == 2, "\(arguments): \(result.errorOutput)")
            #expect(result.errorOutput.contains("usage:"), "\(arguments)")
            #expect(result.output.isEmpty)
        }
        let environment = try runIngestServer(["--port", "0"], environment: ["INGEST_LOG_LEVEL": "loud"])
        #expect(environment.status == 2 && environment.errorOutput.contains("INGEST_LOG_LEVEL"))
        // Nothing was started or created for a usage error.
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/data"))
    }

    @Test("start-up failures exit 1 with what to fix")
    func startupFailures() throws {
        let directory = try TemporaryDirectory("e2e")
        let missing = try runIngestServer(["--config", directory.path + "/absent.json", "--port", "0"])
        #expect(missing.status == 1 && missing.errorOutput.contains("absent.json"))
        let configPath = directory.path + "/ingest.json"
        try Data(#"{"apps": [{"id": "shop"}], "logLevel": "chatty"}"#.utf8).write(to: URL(fileURLWithPath: configPath))
        let badLevel = try runIngestServer(["--config", configPath, "--data-dir", directory.path + "/data"])
        #expect(badLevel.status == 1 && badLevel.errorOutput.contains("logLevel"))
        // The port is taken: the bind fails after the log is set up.
        let listener = try IngestTestServer(config: nil)
        let taken = try runIngestServer(["--port", String(listener.port), "--data-dir", directory.path + "/data2"])
        #expect(taken.status == 1 && taken.errorOutput.contains("\(listener.port)"), "\(taken.errorOutput)")
        #expect(!taken.output.contains("listening on"))
    }

    /// Stops `server` with SIGTERM; its exit status and the rest of its standard output.
    func terminate(_ server: IngestTestServer) throws -> (status: Int32, output: String) {
        kill(server.server.pid, SIGTERM)
        guard let status = server.server.waitForExit(timeout: 20) else {
            throw TestSupportError("ingest-server did not stop after SIGTERM")
        }
        var lines: [String] = []
        while let line = try? server.server.nextOutputLine(timeout: 1) { lines.append(line) }
        return (status, lines.map { $0 + "\n" }.joined())
    }

    func stderrText(_ server: IngestTestServer) -> String { server.server.logText }

    @Test("serving: start-up, one log line per request with its level, SIGTERM stops with `stopped` and exit 0")
    func servesLogsAndStops() throws {
        let server = try IngestTestServer(config: nil, extraArguments: ["--log-level", "debug", "--workers", "2"])
        #expect(try server.call("GET", "/healthz").status == 200)
        #expect(try server.call("GET", "/missing").status == 404)
        let (status, rest) = try terminate(server)
        #expect(status == 0)
        #expect(rest.split(separator: "\n").last == "stopped")
        let log = stderrText(server)
        #expect(log.contains("notice ingest-server"))
        #expect(log.contains("development server: data in"))
        #expect(log.contains("  upload: POST http://127.0.0.1:\(server.port)/api/client/v2.0/app/"))
        #expect(log.split(separator: "\n").contains { $0.contains(" info ") && $0.hasSuffix("GET /healthz 200") })
        #expect(log.split(separator: "\n").contains { $0.contains(" notice ") && $0.hasSuffix("GET /missing 404") })
        #expect(log.contains("signal received: shutting down gracefully"))
        #expect(log.split(separator: "\n").last?.hasSuffix("stopped") == true)
    }

    @Test("the log level: --log-level, else INGEST_LOG_LEVEL, else the file's logLevel, else info")
    func logLevelPrecedence() throws {
        // The file says notice: request lines at info are left out, the 404's notice is kept.
        let config = #"{"stateDirectory": "$DATA", "logLevel": "notice", "apps": [{"id": "shop", "auth": {"anon-user": {}}}]}"#
        let fromFile = try IngestTestServer(config: config, environment: [:])
        _ = try fromFile.call("GET", "/healthz")
        _ = try fromFile.call("GET", "/missing")
        #expect(try terminate(fromFile).status == 0)
        var log = stderrText(fromFile)
        #expect(!log.contains("GET /healthz 200") && log.contains("GET /missing 404"), "\(log)")

        // The environment beats the file: at warning even the start-up notices are left out.
        let fromEnvironment = try IngestTestServer(config: config, environment: ["INGEST_LOG_LEVEL": "warning"])
        _ = try fromEnvironment.call("GET", "/missing")
        #expect(try terminate(fromEnvironment).status == 0)
        log = stderrText(fromEnvironment)
        #expect(!log.contains("listening on") && !log.contains("GET /missing 404"), "\(log)")

        // The flag beats both.
        let fromFlag = try IngestTestServer(
            config: config, extraArguments: ["--log-level", "info"],
            environment: ["INGEST_LOG_LEVEL": "warning"])
        _ = try fromFlag.call("GET", "/healthz")
        #expect(try terminate(fromFlag).status == 0)
        #expect(stderrText(fromFlag).contains("GET /healthz 200"))
    }

    @Test("a shell completion script is generated")
    func completionScript() throws {
        let bash = try runIngestServer(["--generate-completion-script", "bash"])
        #expect(bash.status == 0)
        #expect(bash.output.contains("complete") && bash.output.contains("--max-body-bytes") && bash.output.contains("apikey"))
        let zsh = try runIngestServer(["--generate-completion-script", "zsh"])
        #expect(zsh.status == 0 && zsh.output.contains("#compdef ingest-server"))
    }
}
