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

    /// `--app-id` (or `$DATAINGEST_APP_ID`) and `--base-url`.
    @OptionGroup var server: ServerOptions

    /// How lines are parsed. Default plain.
    @Option(
        help: ArgumentHelp("plain (default), json (JSON lines) or syslog (RFC 5424 or 3164).", valueName: "format"),
        transform: { text in
            guard let format = LineFormat(rawValue: text) else {
                throw ValidationError("--format must be plain, json or syslog, not '\(text)'")
            }
            return format
        })
    var format: LineFormat = .plain

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
    var batchLines = 1_000

    /// Seconds to wait for the upload at exit. Default 60.
    @Option(
        name: .customLong("upload-timeout"),
        help: ArgumentHelp(
            "How long to wait for the upload at exit, in seconds (default 60).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--upload-timeout"))
    var uploadTimeout = 60.0

    /// Bytes of a file's start that identify its content. Default 256.
    @Option(
        name: .customLong("fingerprint-bytes"),
        help: ArgumentHelp(
            "Leading bytes that identify a file's content, with its device and inode (default 256).", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--fingerprint-bytes"))
    var fingerprintBytes = 256

    /// The most files open at once. Default 256.
    @Option(
        name: .customLong("max-open-files"),
        help: ArgumentHelp(
            "The most files held open at once; idle ones are closed and reopened when they grow (default 256).", valueName: "n"),
        transform: ArgumentParsing.positiveInteger("--max-open-files"))
    var maxOpenFiles = 256

    /// Rotated `.gz` files: read or skip. Default read.
    @Option(
        help: ArgumentHelp("read (default) or skip rotated files compressed with gzip (.gz).", valueName: "mode"),
        transform: { text in
            guard let mode = GzipMode(rawValue: text) else { throw ValidationError("--gzip must be read or skip, not '\(text)'") }
            return mode
        })
    var gzip: GzipMode = .read

    /// The store's disk budget. Default 1 GiB.
    @Option(
        name: .customLong("max-pending-bytes"),
        help: ArgumentHelp(
            "The store's disk budget: when it is full, reading pauses until the server has acknowledged more (default 1073741824).",
            valueName: "bytes"), transform: ArgumentParsing.positiveInteger("--max-pending-bytes"))
    var maxPendingBytes = 1 << 30

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
    var multilineMaxBytes = 65_536

    /// How long an event waits for its next line. Default 1 s.
    @Option(
        name: .customLong("multiline-timeout"),
        help: ArgumentHelp(
            "Seconds an event waits for a continuation line before it is sent (default 1).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--multiline-timeout"))
    var multilineTimeout = 1.0

    /// The longest wait between upload retries while the server is unreachable. Default 60.
    @Option(
        name: .customLong("max-retry-delay"),
        help: ArgumentHelp(
            "The longest wait between upload retries while the server cannot be reached, in seconds (default 60).", valueName: "s"),
        transform: ArgumentParsing.positiveNumber("--max-retry-delay"))
    var maxRetryDelay = 60.0

    /// No progress line and no summary.
    @Flag(help: "No progress line and no summary.")
    var quiet = false

    /// The files to follow (paths or globs), or `-` for standard input.
    @Argument(
        help: ArgumentHelp("Files to follow (paths or quoted globs), or - for standard input.", valueName: "file"),
        completion: .file())
    var inputs: [String] = []

    var dataDirectory: String { dataDirectoryOption ?? FileManager.default.currentDirectoryPath + "/ingest-forward-data" }

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("no input: give a FILE or - for standard input (a FILE may be a quoted glob)") }
        if multilineStart != nil && multilineContinue != nil {
            throw ValidationError("give --multiline-start or --multiline-continue, not both")
        }
        for pattern in [multilineStart, multilineContinue].compactMap({ $0 }) where (try? NSRegularExpression(pattern: pattern)) == nil {
            throw ValidationError("'\(pattern)' is not a valid regular expression")
        }
        if inputs.contains("-") && inputs.count > 1 { throw ValidationError("- (standard input) cannot be combined with files") }
    }
}
