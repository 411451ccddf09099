// ingest-server: the DataIngest ingest server executable (Docs/Server.md).
//
// Without a subcommand it serves: from `--config FILE`, or with no config as
// the development server. `apikey create|list|revoke` manages API keys.
import ArgumentParser

/// The `ingest-server` command line, on swift-argument-parser: serving is
/// the command itself (`ingest-server [--config FILE] [options]`), `apikey`
/// its subcommand. Generated `--help` and
/// `--generate-completion-script bash|zsh|fish`.
///
/// Exit status: 0 success (and `--help`), 1 a failure (the message says
/// what to fix), 2 a usage error (an unknown flag, a value out of range).
@main
struct IngestServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-server",
        abstract: "Receives sealed segments from DataIngest clients and writes every object exactly once into the app's database.",
        usage: """
            ingest-server [--config <file>] [--data-dir <dir>] [<options>]
            ingest-server apikey create|list|revoke --app <id> [--name <name>] [--config <file>] [--data-dir <dir>]
            """,
        discussion: """
            Without --config, runs the development server: one app (its id is kept in \
            DIR/development-app-id), anonymous login, development mode (new collections and fields \
            are accepted), SQLite under DIR (default ./ingest-data).

            The first line on standard output is `listening on <url>`; after a graceful shutdown \
            (SIGTERM, SIGINT) the last is `stopped`. The server's log goes to standard error.
            """,
        subcommands: [APIKeyCommand.self])

    @OptionGroup var state: StateOptions
    @OptionGroup var serve: ServeOptions

    func validate() throws {
        _ = try serve.logLevelFromFlagOrEnvironment()
    }

    func run() throws {
        try Serve(state: state, options: serve).run()
    }

    /// Parses and runs; usage errors exit 2 (swift-argument-parser's own
    /// code for them is 64), help and completion scripts 0.
    static func main() {
        let command: ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exitForParseError(error)
        }
        do {
            var command = command
            try command.run()
        } catch {
            exitForParseError(error)
        }
    }

    static func exitForParseError(_ error: Error) -> Never {
        if exitCode(for: error) == .validationFailure {
            // Lowercase `usage:` as the hand-written parsers printed it.
            let text = fullMessage(for: error)
                .replacingOccurrences(of: "Error: ", with: "ingest-server: ")
                .replacingOccurrences(of: "Usage: ", with: "usage: ")
            emit(text + "\n", to: 2)
            exitProcess(2)
        }
        exit(withError: error)
    }
}
