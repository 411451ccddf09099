import ArgumentParser
import Foundation
import IngestServer

/// `--config` and `--data-dir`, shared by serving and `apikey`: which
/// configuration and which state directory.
struct StateOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp("JSON configuration (see Docs/Server.md); without it, the development server.", valueName: "file"))
    var configPath: String?

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "State and SQLite directory (overrides the file's stateDirectory; default ./ingest-data).",
            valueName: "dir"))
    var dataDirectory: String?

    /// The configuration file's, with `--data-dir` as its state directory;
    /// without `--config` the development server's under `--data-dir`.
    func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServerConfiguration {
        if let configPath {
            var configuration = try ServerConfiguration(contentsOfFile: configPath, environment: environment)
            if let dataDirectory { configuration.stateDirectory = dataDirectory }
            return configuration
        }
        return try ServerConfiguration.development(stateDirectory: dataDirectory ?? "./ingest-data")
    }
}
