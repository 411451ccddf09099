#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestTestSupport

/// The command lines of the samples, `ingest-forward` and `ingest-bench`
/// (swift-argument-parser), by running the built binaries: generated
/// `--help` (exit 0), usage errors (exit 2, the message naming the flag),
/// the environment-variable fallbacks, shell completion scripts. The
/// samples' runs against a real server (valid flags end to end) are in
/// their own suites.
@Suite struct CommandLineTests {
    /// No app id in the environment unless a test sets one (an empty one counts as none).
    static let noAppId = ["DATAINGEST_APP_ID": "", "DATAINGEST_BASE_URL": ""]

    func run(_ name: String, _ arguments: [String], environment: [String: String] = noAppId) throws -> ProcessResult {
        let directory = try TemporaryDirectory()
        return try runProcess(try builtExecutable(name), arguments, in: directory.path, timeout: 60, environment: environment)
    }

    /// `--help` exits 0 and prints the usage and every option to standard output.
    @Test(arguments: [
        (
            "WeatherStation",
            ["--app-id", "--base-url", "--rate", "--count", "--duration", "--data-dir", "--device-id", "--upload-timeout", "--quiet"]
        ),
        (
            "ingest-forward",
            [
                "--app-id", "--base-url", "--format", "--data-dir", "--once", "--batch-lines", "--fingerprint-bytes",
                "--max-open-files", "--gzip", "--multiline-start", "--multiline-continue", "--max-pending-bytes",
                "--upload-timeout", "--quiet", "<file>",
            ]
        ),
        ("ServerLogging", ["--app-id", "--base-url", "--port", "--data-dir", "--upload-timeout", "--console"]),
        ("RetailInvoices", ["run", "verify", "export"]),
        ("ingest-bench", ["--json", "--filter"]),
    ])
    func helpListsEveryOption(_ name: String, _ options: [String]) throws {
        for flag in ["--help", "-h"] {
            let help = try run(name, [flag])
            #expect(help.status == 0, "\(help.errorOutput)")
            #expect(help.output.contains("USAGE: \(name)"))
            for option in options { #expect(help.output.contains(option), "\(name) --help lacks \(option)") }
            #expect(help.errorOutput.isEmpty)
        }
    }

    /// Unknown options and bad values exit 2 with a message on standard error.
    @Test(arguments: [
        ("WeatherStation", ["--app-id", "x", "--bogus"], "Unknown option '--bogus'"),
        ("WeatherStation", ["--app-id", "x", "--rate", "0"], "--rate needs a positive number, not '0'"),
        ("WeatherStation", ["--app-id", "x", "--count", "1.5"], "--count needs a positive whole number, not '1.5'"),
        ("WeatherStation", ["--app-id", "x", "--base-url", "ftp://host"], "--base-url needs an http(s) URL, not 'ftp://host'"),
        ("WeatherStation", ["--app-id"], "Missing value for '--app-id <id>'"),
        ("WeatherStation", [], "no app id: pass --app-id (ingest-server prints it) or set DATAINGEST_APP_ID"),
        ("ingest-forward", ["--app-id", "x", "--bogus", "-"], "Unknown option '--bogus'"),
        ("ingest-forward", ["--app-id", "x", "--format", "xml", "-"], "--format must be plain, json, syslog, docker or cri, not 'xml'"),
        ("ingest-forward", ["--app-id", "x", "--batch-lines", "0", "-"], "--batch-lines needs a positive whole number, not '0'"),
        ("ingest-forward", ["--app-id", "x", "--upload-timeout", "soon", "-"], "--upload-timeout needs a positive number, not 'soon'"),
        ("ingest-forward", ["--app-id", "x", "-", "b.log"], "- (standard input) cannot be combined with files"),
        ("ingest-forward", ["--app-id", "x"], "no input: give a FILE or - for standard input"),
        ("ingest-forward", ["-"], "no app id: pass --app-id"),
        ("ServerLogging", ["--app-id", "x", "--port", "65536"], "--port needs a port number"),
        ("ServerLogging", ["--app-id", "x", "--upload-timeout", "0"], "--upload-timeout needs seconds"),
        ("ServerLogging", ["--port", "0"], "no app id: pass --app-id"),
        ("RetailInvoices", [], "no command: give run, verify or export"),
        ("RetailInvoices", ["launch"], "Unexpected argument 'launch'"),
        ("RetailInvoices", ["run", "--app-id", "x", "--stores", "none"], "--stores needs a positive whole number, not 'none'"),
        ("RetailInvoices", ["run"], "no app id: pass --app-id"),
        (
            "RetailInvoices", ["run", "--app-id", "x", "--simulated-time", "9am"],
            "--simulated-time needs a UTC time such as 2026-12-01T09:00:00Z, not '9am'"
        ),
        ("RetailInvoices", ["verify"], "give --database PATH (a SQLite sink) or --postgres URL (a PostgreSQL sink)"),
        (
            "RetailInvoices", ["verify", "--database", "a.sqlite", "--postgres", "postgresql://h/db"],
            "give --database or --postgres, not both"
        ),
        ("RetailInvoices", ["export", "--database", "x.sqlite", "--date", "2026-12-01"], "Missing expected argument '--store <store>'"),
        (
            "RetailInvoices", ["export", "--database", "x.sqlite", "--store", "S01", "--date", "2026-02-30"],
            "--date needs a day such as 2026-12-01, not '2026-02-30'"
        ),
        ("RetailInvoices", ["verify", "--database", "x.sqlite", "--stores", "3"], "Unknown option '--stores'"),
        ("ingest-bench", ["--bogus"], "Unknown option '--bogus'"),
        ("ingest-bench", ["--filter"], "Missing value for '--filter <group>'"),
    ])
    func usageErrorsExitTwo(_ name: String, _ arguments: [String], _ message: String) throws {
        let result = try run(name, arguments)
        #expect(result.status == 2, "\(name) \(arguments): \(result.status) \(result.errorOutput)")
        #expect(result.errorOutput.contains(message), "\(name) \(arguments): \(result.errorOutput)")
        #expect(result.errorOutput.contains("Usage: \(name)") || result.errorOutput.contains("USAGE: \(name)"))
        #expect(result.output.isEmpty)
    }

    /// The app id and the server come from `DATAINGEST_APP_ID` and
    /// `DATAINGEST_BASE_URL` when the flags are absent. Port 1 on 127.0.0.1:
    /// nothing listens there, so each tool starts offline (the first
    /// anonymous login makes the user on the device, under
    /// `<metadata>/<app id>/`), records, and exits 1 because nothing reached
    /// the server within `--upload-timeout`.
    @Test(arguments: [
        ("WeatherStation", ["--count", "1", "--upload-timeout", "1"], "dataingest/dev-from-env/users"),
        (
            "RetailInvoices", ["run", "--stores", "1", "--tills", "1", "--checkouts", "1", "--upload-timeout", "1"],
            "dataingest/dev-from-env/users"
        ),
        ("ingest-forward", ["--once", "--upload-timeout", "1", "lines.log"], "dataingest/dev-from-env/users"),
    ])
    func environmentVariablesAreTheFallbacks(_ name: String, _ arguments: [String], _ userFolder: String) throws {
        let directory = try TemporaryDirectory()
        try Data("one line\n".utf8).write(to: URL(fileURLWithPath: directory.path + "/lines.log"))
        let result = try runProcess(
            try builtExecutable(name), arguments + ["--data-dir", directory.path + "/data"], in: directory.path,
            timeout: 60, environment: Self.fromEnvironment)
        #expect(result.status == 1, "\(name): \(result.status) \(result.output) \(result.errorOutput)")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/data/" + userFolder), "\(name): no \(userFolder)")
        if name == "WeatherStation" { #expect(result.output.contains("server http://127.0.0.1:1"), "\(result.output)") }
    }

    static let fromEnvironment = ["DATAINGEST_APP_ID": "dev-from-env", "DATAINGEST_BASE_URL": "http://127.0.0.1:1"]

    /// The same for the HTTP service, which runs until SIGTERM.
    @Test func serverLoggingTakesTheEnvironmentToo() throws {
        let directory = try TemporaryDirectory()
        let service = Process()
        service.executableURL = URL(fileURLWithPath: try builtExecutable("ServerLogging"))
        service.arguments = ["--port", "0", "--upload-timeout", "1", "--data-dir", directory.path + "/data"]
        service.environment = ProcessInfo.processInfo.environment.merging(Self.fromEnvironment) { _, new in new }
        service.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        let out = Pipe()
        service.standardOutput = out
        service.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try service.run()
        defer { reap(service, within: 0) }
        let first = try readLine(out.fileHandleForReading.fileDescriptor, timeout: 30)
        #expect(first.hasPrefix("listening on http://127.0.0.1:"), "\(first)")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/data/dev-from-env/users"))
        kill(service.processIdentifier, SIGTERM)
        let deadline = monotonicNow() + 30
        while service.isRunning && monotonicNow() < deadline { usleep(20_000) }
        #expect(!service.isRunning)
        if !service.isRunning { #expect(service.terminationStatus == 1) }  // its events are not uploaded
    }

    /// Subcommands have their own help, also through `help <subcommand>`.
    @Test func subcommandsHaveTheirOwnHelp() throws {
        let run = try run("RetailInvoices", ["run", "--help"])
        #expect(run.status == 0)
        for option in [
            "USAGE: RetailInvoices run", "--app-id", "--stores", "--tills", "--checkouts", "--retry-every", "--data-dir",
            "--upload-timeout",
            "--seed", "--simulated-time",
        ] {
            #expect(run.output.contains(option), "run --help lacks \(option)")
        }
        let verify = try self.run("RetailInvoices", ["help", "verify"])
        #expect(verify.status == 0)
        #expect(verify.output.contains("USAGE: RetailInvoices verify [--database <path>] [--postgres <url>]"), "\(verify.output)")
        let export = try self.run("RetailInvoices", ["export", "--help"])
        #expect(export.status == 0)
        for option in ["--database <path>", "--postgres <url>", "--store <store>", "--date <yyyy-mm-dd>", "--output <path>"] {
            #expect(export.output.contains(option), "export --help lacks \(option)")
        }
    }

    /// Valid flags that do not need a server: `ingest-bench` with a filter
    /// that matches no group prints an empty report and exits 0.
    @Test func ingestBenchWithValidFlagsRunsTheGroupsItIsGiven() throws {
        let result = try run("ingest-bench", ["--json", "--filter", "NO-SUCH-GROUP"])
        #expect(result.status == 0, "\(result.errorOutput)")
        let json = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect((json?["figures"] as? [Any])?.isEmpty == true)
    }

    /// `ingest-forward` writes its completion scripts (documented in its README).
    @Test(arguments: [
        ("bash", "complete -o filenames -F _ingest-forward ingest-forward"), ("zsh", "#compdef ingest-forward"),
        ("fish", "complete -c 'ingest-forward'"),
    ])
    func completionScripts(_ shell: String, _ marker: String) throws {
        let result = try run("ingest-forward", ["--generate-completion-script", shell])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.output.contains(marker), "\(result.output.prefix(400))")
        for option in ["app-id", "format", "batch-lines"] { #expect(result.output.contains(option)) }
    }
}
