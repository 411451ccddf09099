import Foundation
import Testing
@testable import IngestServer
import IngestTestSupport

/// `ingest-server apikey create|list|revoke`, run as the built binary.
@Suite struct AuthAPIKeyCommandTests {
    @Test func createListLoginAndRevokeWithAConfigFile() throws {
        let directory = try TemporaryDirectory("auth")
        let configPath = directory.path("ingest.json")
        try Data(
            #"""
            {"stateDirectory": "\#(directory.path("state"))",
             "apps": [{"id": "shop", "auth": {"api-key": {}}}, {"id": "other", "auth": {"anon-user": {}}}]}
            """#.utf8
        ).write(to: URL(fileURLWithPath: configPath))

        let created = try runIngestServer(["apikey", "create", "--app", "shop", "--name", "till-1", "--config", configPath])
        #expect(created.status == 0)
        let key = created.output.trimmingCharacters(in: .newlines)
        #expect(key.hasPrefix("dik_") && !key.contains("\n"))
        #expect(created.errorOutput.contains("not shown again"))

        let duplicate = try runIngestServer(["apikey", "create", "--app", "shop", "--name", "till-1", "--config", configPath])
        #expect(duplicate.status == 1 && duplicate.errorOutput.contains("already has an API key named \"till-1\""))

        let listed = try runIngestServer(["apikey", "list", "--app", "shop", "--config", configPath])
        #expect(listed.status == 0 && listed.output.hasPrefix("till-1\t") && !listed.output.contains(key))

        // The key logs in through the service the server runs.
        let config = try ServerConfiguration(contentsOfFile: configPath)
        do {
            let auth = try AuthService(configuration: config)
            defer { auth.store.close() }
            _ = try auth.login(appId: "shop", provider: "api-key", body: Array(#"{"key": "\#(key)"}"#.utf8))
        }

        let revoked = try runIngestServer(["apikey", "revoke", "--app", "shop", "--name", "till-1", "--config", configPath])
        #expect(revoked.status == 0)
        let again = try runIngestServer(["apikey", "revoke", "--app", "shop", "--name", "till-1", "--config", configPath])
        #expect(again.status == 1)
        #expect(
            try runIngestServer(["apikey", "list", "--app", "shop", "--config", configPath])
                .output.contains("revoked"))

        // A key for an app without the api-key provider is created with a warning.
        let warned = try runIngestServer(["apikey", "create", "--app", "other", "--name", "k", "--config", configPath])
        #expect(warned.status == 0 && warned.errorOutput.contains("not enabled"))
    }

    @Test func developmentStateDirectoryAndUsageErrors() throws {
        let directory = try TemporaryDirectory("auth")
        let state = directory.path("ingest-data")
        let appId = try ServerConfiguration.development(stateDirectory: state).apps[0].id
        let created = try runIngestServer(["apikey", "create", "--app", appId, "--name", "dev", "--data-dir", state])
        #expect(created.status == 0 && created.output.hasPrefix("dik_"))

        let unknownApp = try runIngestServer(["apikey", "create", "--app", "nope", "--name", "x", "--data-dir", state])
        #expect(unknownApp.status == 1 && unknownApp.errorOutput.contains(appId))
        for arguments in [
            [], ["delete"], ["create", "--name", "x"], ["create", "--app", "a"], ["create", "--app"],
            ["list", "--app", "a", "--bogus", "1"], ["list", "--app", "a", "--data-dir"],
        ] {
            let result = try runIngestServer(["apikey"] + arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.errorOutput.contains("usage:"))
        }
        // --data-dir replaces the configuration file's stateDirectory.
        let configPath = directory.path("ingest.json")
        try Data(#"{"stateDirectory": "/nonexistent/never", "apps": [{"id": "shop"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: configPath))
        let overridden = try runIngestServer([
            "apikey", "create", "--app", "shop", "--name", "k", "--config", configPath, "--data-dir", directory.path("other"),
        ])
        #expect(overridden.status == 0)
        #expect(FileManager.default.fileExists(atPath: directory.path("other/state.sqlite")))
        let badConfig = try runIngestServer(["apikey", "list", "--app", "a", "--config", directory.path("absent.json")])
        #expect(badConfig.status == 1 && badConfig.errorOutput.contains("absent.json"))
    }
}
