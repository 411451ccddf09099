import ArgumentParser
import Foundation
import IngestCommandLine

/// The command line of `ingest-forward` (swift-argument-parser: `--help` and
/// shell completion scripts are generated, usage errors exit 2). One
/// property per option, each with its default, so new options are one
/// declaration each.
struct ForwardOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-forward",
        abstract: "Forwards each line of a file or of standard input to an ingest server as a ForwardedLine object.",
        discussion: """
            Each FILE (a path or a glob: *, ?, [...] within a name, ** across directories) is followed like \
            `tail -F`: appended lines are read as they come, files that appear are picked up, a rotated file \
            (renamed, a new one created) is read to its end, a truncated or rewritten one is read again from \
            its start. A file is known by device, inode and a fingerprint of its first bytes. Each file's \
            position is committed in the same store transaction as its lines, so a restart (also after \
            kill -9) resumes exactly there: nothing lost, nothing twice.

            A progress line (lines/s, pending, uploaded) is shown on standard error when it is a terminal; a \
            summary is printed at exit.

            Exit status: 0 done (end of input with --once or standard input, or SIGTERM), 1 error, 2 usage \
            error, 130 interrupted (SIGINT) after a clean stop.
            """)

    /// The configuration file: sources, server, store and limits; a flag
    /// given wins over the file (``ForwardConfig``).
    @Option(
        help: ArgumentHelp(
            "A JSON configuration file (sources, server, store directory, limits); flags override it.", valueName: "path"),
        completion: .file(extensions: ["json"]))
    var config: String?

    /// The app id (else the file's, else `$DATAINGEST_APP_ID`). Not
    /// `ServerOptions`: its check would refuse an app id given in the file.
    @Option(
        name: .customLong("app-id"),
        help: ArgumentHelp("The app id (ingest-server prints it; default: the file's, else $DATAINGEST_APP_ID).", valueName: "id"))
    var appId: String?

    @Option(
        name: .customLong("base-url"),
        help: ArgumentHelp(
            "The ingest server (default: the file's, else $DATAINGEST_BASE_URL or http://127.0.0.1:9090).", valueName: "url"),
        transform: ArgumentParsing.httpURL("--base-url"))
    var baseURL: URL?

    /// How lines are parsed. Default plain.
    @Option(
        help: ArgumentHelp(
            "plain (default), json (JSON lines), syslog (RFC 5424 or 3164), docker (json-file) or cri (containerd, CRI-O).",
            valueName: "format"),
        transform: { text in
            guard let format = LineFormat(rawValue: text) else {
                throw ValidationError("--format must be plain, json, syslog, docker or cri, not '\(text)'")
            }
            return format
        })
    var format: LineFormat?

    /// Users and pending data (with each file's position). Default `./ingest-forward-data`.
    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Users, pending data and file positions (default ./ingest-forward-data).", valueName: "dir"))
    var dataDirectoryOption: String?

    /// Stop at the end of the file instead of following it.
    @Flag(help: "Stop at the end of the file instead of following it.")
    var once = false

    /// The most lines per transaction. Default 1,000.
    @Option(
        name: .customLong("batch-lines"), help: ArgumentHelp("The most lines per transaction (default 1000).", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--batch-lines"))
    var batchLines: Int?

    /// Seconds to wait for the upload at exit. Default 60.
    @Option(
        name: .customLong("upload-timeout"),
        help: ArgumentHelp(
            "How long to wait for the upload at exit, in seconds (default 60).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--upload-timeout"))
    var uploadTimeout: Double?

    /// Bytes of a file's start that identify its content. Default 256.
    @Option(
        name: .customLong("fingerprint-bytes"),
        help: ArgumentHelp(
            "Leading bytes that identify a file's content, with its device and inode (default 256).", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--fingerprint-bytes"))
    var fingerprintBytes: Int?

    /// The most files open at once. Default 256.
    @Option(
        name: .customLong("max-open-files"),
        help: ArgumentHelp(
            "The most files held open at once; idle ones are closed and reopened when they grow (default 256).", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--max-open-files"))
    var maxOpenFiles: Int?

    /// Rotated `.gz` files: read or skip. Default read.
    @Option(
        help: ArgumentHelp("read (default) or skip rotated files compressed with gzip (.gz).", valueName: "mode"),
        transform: { text in
            guard let mode = GzipMode(rawValue: text) else { throw ValidationError("--gzip must be read or skip, not '\(text)'") }
            return mode
        })
    var gzip: GzipMode?

    /// The store's disk budget. Default 1 GiB.
    @Option(
        name: .customLong("max-pending-bytes"),
        help: ArgumentHelp(
            "The store's disk budget: when it is full, reading pauses until the server has acknowledged more (default 1073741824).",
            valueName: "bytes"), transform: ArgumentParsing.positiveInteger("--max-pending-bytes"))
    var maxPendingBytes: Int?

    /// A line matching this starts a multiline event.
    @Option(
        name: .customLong("multiline-start"),
        help: ArgumentHelp(
            "A regular expression: a line matching it starts an event, other lines continue it (stack traces).", valueName: "regex"))
    var multilineStart: String?

    /// A line matching this continues the event before it.
    @Option(
        name: .customLong("multiline-continue"),
        help: ArgumentHelp(
            "A regular expression: a line matching it continues the event before it (e.g. '^\\s').", valueName: "regex"))
    var multilineContinue: String?

    /// The largest multiline event. Default 65,536 bytes.
    @Option(
        name: .customLong("multiline-max-bytes"),
        help: ArgumentHelp(
            "The largest multiline event; a longer one is split (default 65536).", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--multiline-max-bytes"))
    var multilineMaxBytes: Int?

    /// How long an event waits for its next line. Default 1 s.
    @Option(
        name: .customLong("multiline-timeout"),
        help: ArgumentHelp(
            "Seconds an event waits for a continuation line before it is sent (default 1).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--multiline-timeout"))
    var multilineTimeout: Double?

    /// The longest wait between upload retries while the server is unreachable. Default 60.
    @Option(
        name: .customLong("max-retry-delay"),
        help: ArgumentHelp(
            "The longest wait between upload retries while the server cannot be reached, in seconds (default 60).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--max-retry-delay"))
    var maxRetryDelay: Double?

    /// Poll instead of inotify.
    @Flag(help: "Poll the files every 100 ms instead of waiting for inotify (network file systems).")
    var poll = false

    /// Seconds between scans of the patterns. Default 1.
    @Option(
        name: .customLong("scan-interval"),
        help: ArgumentHelp(
            "Seconds between scans of the patterns for new, rotated and removed files (default 1).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--scan-interval"))
    var scanInterval: Double?

    /// Where the metrics are written (Prometheus text), if anywhere.
    @Option(
        name: .customLong("metrics-file"),
        help: ArgumentHelp(
            "Write the metrics (Prometheus text format) to this file once a second, e.g. for node_exporter's textfile collector.",
            valueName: "path"))
    var metricsFile: String?

    /// No progress line and no summary.
    @Flag(help: "No progress line and no summary.")
    var quiet = false

    /// The files to follow (paths or globs), or `-` for standard input.
    @Argument(
        help: ArgumentHelp("Files to follow (paths or quoted globs), or - for standard input.", valueName: "file"),
        completion: .file())
    var inputs: [String] = []

    func validate() throws {
        guard !inputs.isEmpty || config != nil else {
            throw ValidationError("no input: give a FILE or - for standard input (a FILE may be a quoted glob), or --config with sources")
        }
        // With --config the app id may be in the file (checked once it is read).
        if config == nil && (appId ?? ProcessInfo.processInfo.environment["DATAINGEST_APP_ID"] ?? "").isEmpty {
            throw ValidationError("no app id: pass --app-id (ingest-server prints it), set DATAINGEST_APP_ID or server.appId in --config")
        }
        if multilineStart != nil && multilineContinue != nil {
            throw ValidationError("give --multiline-start or --multiline-continue, not both")
        }
        for pattern in [multilineStart, multilineContinue].compactMap({ $0 }) where (try? NSRegularExpression(pattern: pattern)) == nil {
            throw ValidationError("'\(pattern)' is not a valid regular expression")
        }
        if inputs.contains("-") && inputs.count > 1 { throw ValidationError("- (standard input) cannot be combined with files") }
    }
}
