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
            A FILE is followed like `tail -F`: appended lines are read as they come, a rotated file (renamed, \
            a new one created) is read to its end before the new one is opened, and a truncated file is read \
            again from its start. The position is checkpointed after every committed batch, so a restart \
            resumes where the last one stopped: nothing lost, nothing twice.

            A progress line (lines/s, pending, uploaded) is shown on standard error when it is a terminal; a \
            summary is printed at exit.

            Exit status: 0 done (end of input with --once or standard input, or SIGTERM), 1 error, 2 usage \
            error, 130 interrupted (SIGINT) after a clean stop.
            """)

    /// `--app-id` (or `$DATAINGEST_APP_ID`) and `--base-url`.
    @OptionGroup var server: ServerOptions

    /// How lines are parsed. Default plain.
    @Option(help: ArgumentHelp("plain (default), json (JSON lines) or syslog (RFC 5424 or 3164).", valueName: "format"),
            transform: { text in
                guard let format = LineFormat(rawValue: text) else {
                    throw ValidationError("--format must be plain, json or syslog, not '\(text)'")
                }
                return format
            })
    var format: LineFormat = .plain

    /// Checkpoint, users and pending data. Default `./ingest-forward-data`.
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "Checkpoint, users and pending data (default ./ingest-forward-data).", valueName: "dir"))
    var dataDirectoryOption: String?

    /// Stop at the end of the file instead of following it.
    @Flag(help: "Stop at the end of the file instead of following it.")
    var once = false

    /// The most lines per transaction. Default 1,000.
    @Option(name: .customLong("batch-lines"), help: ArgumentHelp("The most lines per transaction (default 1000).", valueName: "n"),
            transform: ArgumentParsing.positiveInteger("--batch-lines"))
    var batchLines = 1_000

    /// Seconds to wait for the upload at exit. Default 60.
    @Option(name: .customLong("upload-timeout"), help: ArgumentHelp(
        "How long to wait for the upload at exit, in seconds (default 60).", valueName: "s"),
            transform: ArgumentParsing.positiveNumber("--upload-timeout"))
    var uploadTimeout = 60.0

    /// No progress line and no summary.
    @Flag(help: "No progress line and no summary.")
    var quiet = false

    /// The file to follow, or `-` for standard input.
    @Argument(help: ArgumentHelp("The file to follow, or - for standard input.", valueName: "file"),
              completion: .file())
    var input: String?

    var dataDirectory: String { dataDirectoryOption ?? FileManager.default.currentDirectoryPath + "/ingest-forward-data" }

    func validate() throws {
        guard input != nil else { throw ValidationError("no input: give a FILE or - for standard input") }
    }
}
