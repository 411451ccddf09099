#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestSupport

/// A failure in the sync tests' own plumbing.
struct SyncTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic seconds, for bounded waits.
func syncNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

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

/// A temporary directory removed when released.
final class SyncDirectory {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "dataingest-sync-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// An executable built next to the test bundle.
func builtExecutable(_ name: String) throws -> String {
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    let candidates = [exe.deletingLastPathComponent().appendingPathComponent(name).path,
                      argv0.deletingLastPathComponent().appendingPathComponent(name).path,
                      argv0.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name).path]
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw SyncTestError("\(name) not found in \(candidates); build it with `swift build`")
    }
    return found
}

/// A real `ingest-server` process on 127.0.0.1, killed by PID on release.
/// `restart()` starts it again on the same port and data directory.
final class SyncTestServer {
    private var process: Process?
    let directory: String
    let dataPath: String
    let config: String?
    let extraArguments: [String]
    private(set) var port: UInt16 = 0

    /// Starts the development server (`config == nil`) or one from JSON `config`.
    init(in directory: String, config: String? = nil, extraArguments: [String] = []) throws {
        self.directory = directory
        self.dataPath = directory + "/server-data"
        self.config = config
        self.extraArguments = extraArguments
        if let config {
            try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/ingest.json"))
        }
        try start(port: 0)
    }

    deinit { kill9() }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The development app's id.
    var developmentAppId: String {
        ((try? String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var isRunning: Bool { process?.isRunning ?? false }

    func start(port requested: UInt16) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-server"))
        var arguments = ["--port", String(requested), "--data-dir", dataPath]
        if config != nil { arguments += ["--config", directory + "/ingest.json"] }
        process.arguments = arguments + extraArguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        process.standardOutput = out
        let logPath = directory + "/server-stderr.log"
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)
        log?.seekToEndOfFile()
        process.standardError = log
        try process.run()
        self.process = process
        let line = try readLine(out.fileHandleForReading.fileDescriptor, timeout: 20)
        guard let range = line.range(of: "listening on http://127.0.0.1:"), let port = UInt16(line[range.upperBound...]) else {
            kill9()
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw SyncTestError("ingest-server did not start: '\(line)' \(text)")
        }
        self.port = port
    }

    /// Starts the server again on the same port and data directory (bounded retries while the port frees).
    func restart() throws {
        var lastError: Error?
        for _ in 0..<20 {
            do {
                try start(port: port)
                return
            } catch {
                lastError = error
                usleep(250_000)
            }
        }
        throw lastError ?? SyncTestError("restart failed")
    }

    /// `kill -9` by PID (idempotent).
    func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

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

/// Reads one line from `fd` within `timeout` seconds.
func readLine(_ fd: Int32, timeout: Double) throws -> String {
    var line: [UInt8] = []
    let deadline = syncNow() + timeout
    while !line.contains(10) && syncNow() < deadline {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, 100) > 0 else { continue }
        var byte: UInt8 = 0
        let n = read(fd, &byte, 1)
        if n <= 0 { break }
        line.append(byte)
    }
    return String(decoding: line.prefix { $0 != 10 }, as: UTF8.self)
}

/// An app client for a test server, with fast settings: segments sealed
/// after 200 ms, backoff capped at 0.5 s.
func makeTestApp(id: String, server: SyncTestServer, directory: String,
                 transport: (any SyncTransport)? = nil,
                 _ adjust: (inout App.Configuration) -> Void = { _ in }) -> App {
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
                realm.create(SyncReading.self, value: ["_id": ObjectId.generate(), "seq": seq, "thread": thread,
                                                       "payload": "reading \(seq) from thread \(thread)"])
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

/// Polls `condition` every 20 ms for at most `timeout` seconds without
/// blocking a thread of the concurrency pool (which the sync session needs).
func eventuallyAsync(timeout: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = syncNow() + timeout
    while syncNow() < deadline {
        if try condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try condition()
}

/// Sleeps without blocking a thread of the concurrency pool.
func pauseAsync(_ seconds: Double) async {
    try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
}

/// Polls `condition` every 20 ms for at most `timeout` seconds (blocking: for synchronous tests).
func eventually(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = syncNow() + timeout
    while syncNow() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}
