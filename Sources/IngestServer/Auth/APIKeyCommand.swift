import Foundation

/// The `ingest-server apikey …` admin subcommand, as a function the
/// executable calls and tests run directly:
///
/// ```
/// ingest-server apikey create --app ID --name NAME [--config FILE] [--data-dir DIR]
/// ingest-server apikey list   --app ID             [--config FILE] [--data-dir DIR]
/// ingest-server apikey revoke --app ID --name NAME [--config FILE] [--data-dir DIR]
/// ```
///
/// Without `--config` it works on the development server's state directory
/// (`--data-dir`, default `./ingest-data`); with both, `--data-dir` replaces
/// the file's `stateDirectory`, as for `ingest-server` itself. `create`
/// prints the key alone on standard output (the only time it is shown).
///
/// ```swift
/// let result = APIKeyCommand.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
/// print(result.output, terminator: "")
/// exit(result.status)
/// ```
package enum APIKeyCommand {
    /// What the command printed and its exit status.
    package struct Result: Sendable, Equatable {
        /// 0 on success, 1 on failure, 2 on a usage error.
        package var status: Int32
        /// Standard output text.
        package var output: String
        /// Standard error text.
        package var errorOutput: String
    }

    /// The usage text.
    package static let usage = """
        usage: ingest-server apikey create --app ID --name NAME [--config FILE] [--data-dir DIR]
               ingest-server apikey list   --app ID             [--config FILE] [--data-dir DIR]
               ingest-server apikey revoke --app ID --name NAME [--config FILE] [--data-dir DIR]

        """

    /// Runs the subcommand; `arguments` start after `apikey`.
    package static func run(arguments: [String],
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> Result {
        func usageError(_ message: String) -> Result {
            Result(status: 2, output: "", errorOutput: "ingest-server apikey: \(message)\n\(usage)")
        }
        guard let action = arguments.first, ["create", "list", "revoke"].contains(action) else {
            return usageError("expected create, list or revoke")
        }
        var options: [String: String] = [:]
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            guard ["--app", "--name", "--config", "--data-dir"].contains(flag) else {
                return usageError("unknown option \(flag)")
            }
            guard let value = rest.popFirst(), !value.hasPrefix("--") else { return usageError("\(flag) needs a value") }
            options[flag] = value
        }
        guard let appId = options["--app"] else { return usageError("--app is required") }
        let name = options["--name"]
        if action != "list" && name == nil { return usageError("--name is required") }

        var configuration: ServerConfiguration
        do {
            if let file = options["--config"] {
                configuration = try ServerConfiguration(contentsOfFile: file, environment: environment)
                if let directory = options["--data-dir"] { configuration.stateDirectory = directory }
            } else {
                configuration = try ServerConfiguration.development(stateDirectory: options["--data-dir"] ?? "./ingest-data")
            }
        } catch {
            return Result(status: 1, output: "", errorOutput: "ingest-server apikey: \(error)\n")
        }
        guard let app = configuration.app(appId) else {
            let known = configuration.apps.map(\.id).joined(separator: ", ")
            return Result(status: 1, output: "",
                          errorOutput: "ingest-server apikey: no app \"\(appId)\" in the configuration (apps: \(known))\n")
        }
        do {
            let auth = try AuthService(configuration: configuration)
            defer { auth.store.close() }
            switch action {
            case "create":
                let created = try auth.createAPIKey(appId: appId, name: name ?? "")
                var note = "created API key \"\(created.record.name)\" for app \(appId) (user \(created.record.userId)); "
                    + "store it now, it is not shown again\n"
                if !app.auth.isEnabled(.apiKey) {
                    note += "warning: the api-key provider is not enabled for app \(appId); add \"api-key\": {} to its auth\n"
                }
                return Result(status: 0, output: created.key + "\n", errorOutput: note)
            case "list":
                let keys = try auth.store.apiKeys(appId: appId)
                let lines = keys.map { key in
                    "\(key.name)\t\(key.id)\tuser \(key.userId)\tcreated \(key.createdAt)"
                        + (key.revokedAt.map { "\trevoked \($0)" } ?? "")
                }
                return Result(status: 0, output: lines.map { $0 + "\n" }.joined(), errorOutput: "")
            default:
                guard try auth.revokeAPIKey(appId: appId, name: name ?? "") else {
                    return Result(status: 1, output: "",
                                  errorOutput: "ingest-server apikey: app \(appId) has no valid API key named \"\(name ?? "")\"\n")
                }
                return Result(status: 0, output: "", errorOutput: "revoked API key \"\(name ?? "")\" of app \(appId)\n")
            }
        } catch {
            return Result(status: 1, output: "", errorOutput: "ingest-server apikey: \(error)\n")
        }
    }
}
