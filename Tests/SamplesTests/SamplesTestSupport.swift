#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport
import IngestTestSupport

/// What a finished sample process printed and returned.
struct ProcessResult {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs `executable` to completion in `directory` (killed by PID after
/// `timeout` seconds, then failed), with `environment` added to this
/// process's environment, through the test support's `runProcess`. A
/// process killed by a signal has `status` 128 + the signal's number, as in
/// a shell.
func runProcess(
    _ executable: String, _ arguments: [String], in directory: String, timeout: Double = 90,
    environment: [String: String] = [:]
) throws -> ProcessResult {
    let result = try IngestTestSupport.runProcess(
        executable, arguments,
        environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
        directory: directory, timeout: timeout)
    return ProcessResult(
        status: result.killedBySignal ? 128 + result.status : result.status, output: result.output, errorOutput: result.errorOutput)
}

/// A real development `ingest-server` on 127.0.0.1, killed by PID on release.
final class SampleServer {
    private let server: IngestServerProcess
    let dataPath: String
    var port: UInt16 { server.port }
    /// The server's process id (for SIGSTOP and SIGCONT).
    var pid: Int32 { server.pid }

    private let configuredAppId: String?

    /// The development server, or with `config` (JSON text of a
    /// configuration whose one app is `appId`) a configured one.
    init(in directory: String, config: String? = nil, appId: String? = nil) throws {
        dataPath = directory + "/server-data"
        configuredAppId = appId
        var arguments = ["--data-dir", dataPath]
        if let config {
            let path = directory + "/ingest.json"
            try Data(config.utf8).write(to: URL(fileURLWithPath: path))
            arguments += ["--config", path]
        }
        server = try IngestServerProcess(in: directory, arguments: arguments)
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// What the server wrote to standard error so far.
    var logText: String { server.logText }

    var appId: String {
        configuredAppId
            ?? ((try? String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var databasePath: String { dataPath + "/\(appId).sqlite" }

    /// `kill -9` of the server by PID.
    func kill9() { server.kill9() }

    /// Starts the server again on the same port and data directory.
    func restart() throws { try server.restart() }

    /// After ``kill9()``: the database checkpointed (its WAL folded into the
    /// file) and copied to `path`, for a test to change.
    func copyDatabase(to path: String) throws {
        let db = try SQLiteConnection(path: databasePath, options: .init(access: .readWrite))
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: databasePath, toPath: path)
    }

    /// The first column of each row of `sql`, as text.
    func query(_ sql: String) throws -> [String] {
        let db = try SQLiteConnection(path: databasePath, options: .init(access: .readWrite))
        let statement = try db.makeStatement(sql: sql)
        var rows: [String] = []
        while try statement.step() { rows.append(statement.text(at: 0)) }
        return rows
    }
}
