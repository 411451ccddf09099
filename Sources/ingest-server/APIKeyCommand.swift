import ArgumentParser
import Foundation
import IngestServer

/// `ingest-server apikey create|list|revoke`: the keys of the `api-key`
/// provider, in the state database the server uses (it sees new and
/// revoked keys at once).
///
/// ```
/// ingest-server apikey create --app ID --name NAME [--config FILE] [--data-dir DIR]
/// ingest-server apikey list   --app ID             [--config FILE] [--data-dir DIR]
/// ingest-server apikey revoke --app ID --name NAME [--config FILE] [--data-dir DIR]
/// ```
///
/// Without `--config` it works on the development server's state directory
/// (`--data-dir`, default `./ingest-data`); with both, `--data-dir` replaces
/// the file's `stateDirectory`. `create` prints the key alone on standard
/// output (the only time it is shown).
struct APIKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apikey",
        abstract: "Create, list or revoke the API keys of an app (provider api-key).",
        usage: "ingest-server apikey create|list|revoke --app <id> [--name <name>] [--config <file>] [--data-dir <dir>]",
        subcommands: [Create.self, List.self, Revoke.self])

    /// `apikey` without an action: a usage error.
    func run() throws {
        emit(
            "ingest-server apikey: expected create, list or revoke\nusage: \(Self.usageString())\n"
                + "  See 'ingest-server apikey --help' for more information.\n", to: 2)
        throw ExitCode(2)
    }

    /// The options every action takes.
    struct Target: ParsableArguments {
        @Option(help: ArgumentHelp("The app id.", valueName: "id"))
        var app: String

        @OptionGroup var state: StateOptions

        /// The configuration and the app, or exit 1 with what is wrong.
        func open() throws -> (AuthService, AppConfiguration) {
            let configuration: ServerConfiguration
            let app: AppConfiguration
            do {
                configuration = try state.load()
            } catch {
                throw failure("\(error)")
            }
            guard let found = configuration.app(self.app) else {
                let known = configuration.apps.map(\.id).joined(separator: ", ")
                throw failure("no app \"\(self.app)\" in the configuration (apps: \(known))")
            }
            app = found
            do {
                return (try AuthService(configuration: configuration), app)
            } catch {
                throw failure("\(error)")
            }
        }
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a key and print it (alone, once) on standard output; the server stores only its SHA-256.")

        @OptionGroup var target: Target
        @Option(help: ArgumentHelp("The key's name, unique per app (revoked keys keep theirs).", valueName: "name"))
        var name: String

        func run() throws {
            let (auth, app) = try target.open()
            defer { auth.store.close() }
            let created: CreatedAPIKey
            do {
                created = try auth.createAPIKey(appId: target.app, name: name)
            } catch {
                throw failure("\(error)")
            }
            emit(created.key + "\n")
            var note =
                "created API key \"\(created.record.name)\" for app \(target.app) (user \(created.record.userId)); "
                + "store it now, it is not shown again\n"
            if !app.auth.isEnabled(.apiKey) {
                note += "warning: the api-key provider is not enabled for app \(target.app); add \"api-key\": {} to its auth\n"
            }
            emit(note, to: 2)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the app's keys: name, id, user, creation and revocation time (never the key).")

        @OptionGroup var target: Target

        func run() throws {
            let (auth, _) = try target.open()
            defer { auth.store.close() }
            let keys: [APIKeyRecord]
            do {
                keys = try auth.store.apiKeys(appId: target.app)
            } catch {
                throw failure("\(error)")
            }
            emit(
                keys.map { key in
                    "\(key.name)\t\(key.id)\tuser \(key.userId)\tcreated \(key.createdAt)"
                        + (key.revokedAt.map { "\trevoked \($0)" } ?? "") + "\n"
                }.joined())
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a key and the sessions it started.")

        @OptionGroup var target: Target
        @Option(help: ArgumentHelp("The key's name.", valueName: "name"))
        var name: String

        func run() throws {
            let (auth, _) = try target.open()
            defer { auth.store.close() }
            let revoked: Bool
            do {
                revoked = try auth.revokeAPIKey(appId: target.app, name: name)
            } catch {
                throw failure("\(error)")
            }
            guard revoked else { throw failure("app \(target.app) has no valid API key named \"\(name)\"") }
            emit("revoked API key \"\(name)\" of app \(target.app)\n", to: 2)
        }
    }
}

/// Prints `ingest-server apikey: <message>` and returns the exit status 1 to throw.
private func failure(_ message: String) -> ExitCode {
    emit("ingest-server apikey: \(message)\n", to: 2)
    return ExitCode.failure
}
