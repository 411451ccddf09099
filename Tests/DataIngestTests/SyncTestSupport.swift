#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// A numbered asymmetric object: `seq` proves each object arrives exactly once.
final class SyncReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var seq: Int
    @Persisted var thread: Int
    @Persisted var payload: String
}

/// Declared on the strict test server with `seq` as a string, so every
/// object of it is refused (`wrongType`).
final class SyncStrict: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var seq: Int
}

/// A real `ingest-server` process on 127.0.0.1, killed by PID on release.
/// `restart()` starts it again on the same port and data directory.
final class SyncTestServer {
    /// The process (IngestTestSupport's launcher).
    let server: IngestServerProcess
    let directory: String
    let dataPath: String
    let config: String?
    let extraArguments: [String]
    var port: UInt16 { server.port }

    /// Starts the development server (`config == nil`) or one from JSON `config`.
    init(in directory: String, config: String? = nil, extraArguments: [String] = []) throws {
        self.directory = directory
        self.dataPath = directory + "/server-data"
        self.config = config
        self.extraArguments = extraArguments
        var arguments = ["--data-dir", dataPath]
        if let config {
            try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/ingest.json"))
            arguments += ["--config", directory + "/ingest.json"]
        }
        server = try IngestServerProcess(in: directory, arguments: arguments + extraArguments)
    }

    var baseURL: URL { server.baseURL }

    /// The development app's id.
    var developmentAppId: String {
        ((try? String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var isRunning: Bool { server.isRunning }

    func start(port requested: UInt16) throws { try server.start(port: requested) }

    /// Starts the server again on the same port and data directory (bounded retries while the port frees).
    func restart() throws { try server.restart() }

    /// `kill -9` by PID (idempotent).
    func kill9() { server.kill9() }

    /// The SQLite sink of `app`.
    func sinkPath(_ app: String) -> String { dataPath + "/\(app).sqlite" }

    /// Runs `sql` against the app's sink and returns the first column of each row as Int64.
    func query(_ app: String, _ sql: String) throws -> [Int64] {
        let db = try SQLiteConnection(path: sinkPath(app), options: .init(access: .readOnly))
        let statement = try db.makeStatement(sql: sql)
        var rows: [Int64] = []
        while try statement.step() { rows.append(statement.int64(at: 0)) }
        return rows
    }

    /// Rows in `table`, 0 while the table does not exist yet.
    func count(_ app: String, _ table: String) -> Int64 {
        ((try? query(app, "SELECT count(*) FROM \"\(table)\"")) ?? nil)?.first ?? 0
    }

    /// A text column of each row.
    func queryText(_ app: String, _ sql: String) throws -> [String] {
        let db = try SQLiteConnection(path: sinkPath(app), options: .init(access: .readOnly))
        let statement = try db.makeStatement(sql: sql)
        var rows: [String] = []
        while try statement.step() { rows.append(statement.text(at: 0)) }
        return rows
    }

    /// Asserts that the table holds exactly the `seq` values 0..<count, each once.
    func expectExactlyOnce(_ app: String, table: String, count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let total = try query(app, "SELECT count(*) FROM \"\(table)\"").first ?? -1
        let distinct = try query(app, "SELECT count(DISTINCT seq) FROM \"\(table)\"").first ?? -1
        let range = try query(app, "SELECT min(seq) FROM \"\(table)\"") + query(app, "SELECT max(seq) FROM \"\(table)\"")
        #expect(total == Int64(count), "rows in \(table)", sourceLocation: sourceLocation)
        #expect(distinct == Int64(count), "distinct seq in \(table)", sourceLocation: sourceLocation)
        if count > 0 { #expect(range == [0, Int64(count - 1)], sourceLocation: sourceLocation) }
    }
}

/// Rows in `table` of the SQLite file at `path`, 0 if it cannot be read yet.
func sinkRowCount(path: String, table: String) -> Int64 {
    guard let db = try? SQLiteConnection(path: path, options: .init(access: .readOnly)),
        let statement = try? db.makeStatement(sql: "SELECT count(*) FROM \"\(table)\""),
        (try? statement.step()) == true
    else { return 0 }
    return statement.int64(at: 0)
}

/// An app client for a test server, with fast settings: segments sealed
/// after 200 ms, backoff capped at 0.5 s.
func makeTestApp(
    id: String, server: SyncTestServer, directory: String,
    transport: (any SyncTransport)? = nil,
    _ adjust: (inout App.Configuration) -> Void = { _ in }
) -> App {
    var configuration = App.Configuration(baseURL: server.baseURL, metadataDirectory: directory + "/metadata")
    configuration.segmentStore.maxSegmentAgeMilliseconds = 200
    configuration.sync.initialBackoff = 0.05
    configuration.sync.maximumBackoff = 0.5
    configuration.transport = transport
    adjust(&configuration)
    return App(id: id, configuration: configuration)
}

/// Opens a synced realm of `types` for `user`.
func openSyncedRealm(_ user: User, _ types: [ObjectBase.Type] = [SyncReading.self]) throws -> Realm {
    var configuration = user.flexibleSyncConfiguration()
    configuration.objectTypes = types
    return try Realm(configuration: configuration)
}

/// Commits `seq` values `range` as SyncReadings in transactions of `perTransaction`.
func writeReadings(_ realm: Realm, _ range: Range<Int>, perTransaction: Int = 100, thread: Int = 0) throws {
    var start = range.lowerBound
    while start < range.upperBound {
        let end = min(range.upperBound, start + perTransaction)
        try realm.write {
            for seq in start..<end {
                realm.create(
                    SyncReading.self,
                    value: [
                        "_id": ObjectId.generate(), "seq": seq, "thread": thread,
                        "payload": "reading \(seq) from thread \(thread)",
                    ])
            }
        }
        start = end
    }
}

/// Collects what the app's error handler receives.
final class ErrorCollector: @unchecked Sendable {  // state in a LockedBox
    private let box = LockedBox<[SyncError]>([])
    var errors: [SyncError] { box.withLock { $0 } }
    func install(on app: App) {
        app.syncManager.errorHandler = { [self] error, _ in box.withLock { $0.append(error) } }
    }
}

/// Sleeps without blocking a thread of the concurrency pool.
func pauseAsync(_ seconds: Double) async {
    try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
}

/// Starts `sync-client-child` with `arguments` in `directory`, against
/// `server`'s app `appId` (App.Configuration's defaults: the base URL from the
/// environment, the metadata in the current directory); its standard output
/// is the returned pipe.
func startSyncClientChild(
    _ arguments: [String], in directory: String, server: SyncTestServer,
    appId: String, executable: String = "sync-client-child"
) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try builtExecutable(executable))
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    var environment = ProcessInfo.processInfo.environment
    environment["APP_ID"] = appId
    environment["DATAINGEST_BASE_URL"] = server.baseURL.absoluteString
    environment["DATAINGEST_METADATA_DIRECTORY"] = nil
    process.environment = environment
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    return (process, out)
}
