#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
import IngestTestSupport
@testable import IngestServer

/// Issue 18: `Docs/openapi.yaml` describes every route, and stays true:
/// schemathesis (PyPI, installed by `Scripts/test.sh` into
/// `.build/schemathesis-venv`, path in `INGEST_TEST_SCHEMATHESIS`) sends its
/// generated requests to a real development server, bounded in count
/// (`OPENAPI_MAX_EXAMPLES` per operation and phase, default 25) and time
/// (the process is killed after 240 s), and every answer must match the
/// description: status, content type, headers and body schema, including the
/// `error_code` enum. Afterwards the server is healthy and nothing was
/// written by a rejected request.
///
/// Two of schemathesis' checks are left out, as they test something the
/// description cannot say: `positive_data_acceptance` (a schema cannot
/// describe a valid gzip segment, so generated upload bodies are rightly
/// refused) and `negative_data_rejection` (logins ignore members their
/// provider does not use, as documented, so a mistyped one is accepted).
@Suite("OpenAPI description checked by schemathesis", .serialized)
struct OpenAPITests {
    var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test func everyAnswerMatchesTheDescription() throws {
        guard
            let schemathesis = try TestEnvironment.require(
                ProcessInfo.processInfo.environment["INGEST_TEST_SCHEMATHESIS"],
                "schemathesis (INGEST_TEST_SCHEMATHESIS; Scripts/test.sh installs it and sets it)")
        else { return }
        let directory = try TemporaryDirectory("e2e")
        let server = try IngestTestServer(config: nil, directory: directory)
        defer { server.stop() }
        let dataPath = directory.path + "/data"
        let appId = try server.developmentAppId()
        let tokens = try server.login(app: appId)

        let maxExamples = ProcessInfo.processInfo.environment["OPENAPI_MAX_EXAMPLES"] ?? "25"
        let run = try ChildProcess.run(
            schemathesis,
            [
                "--config-file", root.appendingPathComponent("Tests/openapi/schemathesis.toml").path,
                "run", root.appendingPathComponent("Docs/openapi.yaml").path,
                "--url", "http://127.0.0.1:\(server.port)",
                "--max-examples", maxExamples,
                "--checks", "all", "--exclude-checks", "negative_data_rejection,positive_data_acceptance",
                "--report-dir", directory.path + "/schemathesis-report",
            ],
            environment: [
                "OPENAPI_APP_ID": appId, "OPENAPI_ACCESS_TOKEN": tokens.access, "OPENAPI_REFRESH_TOKEN": tokens.refresh,
                "OPENAPI_HOOKS": root.appendingPathComponent("Tests/openapi/hooks.py").path, "NO_COLOR": "1",
            ], in: directory, name: "schemathesis", timeout: 240)
        let output = run.output
        print("schemathesis took \(Int(run.seconds)) s: \(output.split(separator: "\n").filter { $0.contains("generated") }.joined())")
        #expect(!run.timedOut, "schemathesis did not finish within 240 s")
        #expect(run.status == 0, "\(output.suffix(6000))")

        // Healthy afterwards.
        let health = try server.call("GET", "/healthz")
        #expect(health.status == 200 && health.string("status") == "ok")
        // Nothing written by a rejected request: only the anonymous logins
        // that succeeded left rows (one user and one refresh token each); no
        // other user, no API key, no object, no segment receipt.
        let state = dataPath + "/state.sqlite"
        let users = try sqliteRows(state, "SELECT count(*) FROM users").first?.first ?? "?"
        #expect(try sqliteRows(state, "SELECT count(*) FROM users WHERE provider <> 'anon-user'") == [["0"]])
        #expect(try sqliteRows(state, "SELECT count(*) FROM refresh_tokens") == [[users]])
        #expect(try sqliteRows(state, "SELECT count(*) FROM api_keys") == [["0"]])
        let sink = dataPath + "/\(appId).sqlite"
        #expect(try sqliteRows(sink, "SELECT count(*) FROM _dataingest_receipts") == [["0"]])
        #expect(try sqliteRows(sink, "SELECT name FROM sqlite_master WHERE type = 'table'") == [["_dataingest_receipts"]])
    }
}
