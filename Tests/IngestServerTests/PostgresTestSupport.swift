#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestTestSupport

/// The throwaway PostgreSQL that Scripts/test.sh starts
/// (Scripts/services/postgres.sh): its URI, or nil when the variable is
/// absent (the tests that need it are then skipped with that reason).
enum PostgresTestService {
    static var url: String? { ProcessInfo.processInfo.environment["INGEST_TEST_POSTGRES_URL"] }
    /// The service folder, for restarting the server mid-test.
    static var directory: String? { ProcessInfo.processInfo.environment["INGEST_TEST_POSTGRES_DIR"] }
    static var isAvailable: Bool { url != nil }
    static let skipReason: Comment = "INGEST_TEST_POSTGRES_URL is not set: run Scripts/test.sh, which starts PostgreSQL"

    /// Scripts/services/postgres.sh in this checkout.
    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Scripts/services/postgres.sh").path
    }

    /// Runs `postgres.sh stop|start DIR` (bounded by the script's own waits).
    static func control(_ command: String) throws {
        guard let directory else { throw TestSupportError("INGEST_TEST_POSTGRES_DIR is not set") }
        let status = try DetachedCommand.run(["/bin/bash", script, command, directory])
        guard status == 0 else { throw TestSupportError("postgres.sh \(command) failed with status \(status)") }
    }
}

/// A command whose children may outlive it (a daemon it starts): run with
/// posix_spawn + waitpid, every standard stream on /dev/null, because
/// Foundation's Process waits for the daemonized PostgreSQL too.
enum DetachedCommand {
    /// Runs `arguments` (the first is the executable's path) and returns its
    /// wait status. Every descriptor above 2 is closed in the child: the test
    /// process holds pipes without close-on-exec (Foundation's `Pipe`), and a
    /// daemon that inherited a pipe's write end would keep a read of that
    /// pipe to its end waiting until the daemon stops.
    static func run(_ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        guard addCloseFrom(&actions, 3) == 0 else { throw TestSupportError("posix_spawn_file_actions_addclosefrom_np failed") }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw TestSupportError("cannot start \(arguments[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which the Glibc module does not import without `_GNU_SOURCE`.
    private static let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("glibc has no posix_spawn_file_actions_addclosefrom_np (needs 2.34 or later)")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}

/// A database of its own on the test PostgreSQL, dropped on release.
final class PostgresTestDatabase {
    let name: String
    /// The URI of this database.
    let url: String

    init() throws {
        guard let base = PostgresTestService.url else { throw TestSupportError("\(PostgresTestService.skipReason)") }
        name = "ingest_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let admin = try PostgresConnection(base)
        try admin.execute("CREATE DATABASE \(name)")
        admin.close()
        url = Self.replacingDatabase(in: base, with: name)
    }

    deinit {
        guard let base = PostgresTestService.url, let admin = try? PostgresConnection(base) else { return }
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        admin.close()
    }

    /// `postgresql://user@host:port/db?query` with `db` replaced.
    static func replacingDatabase(in uri: String, with database: String) -> String {
        guard let scheme = uri.range(of: "://") else { return uri }
        let rest = uri[scheme.upperBound...]
        let query = rest.firstIndex(of: "?")
        let authority = rest[..<(rest.firstIndex(of: "/") ?? query ?? rest.endIndex)]
        let suffix = query.map { String(rest[$0...]) } ?? ""
        return String(uri[..<scheme.upperBound]) + authority + "/" + database + suffix
    }

    /// Rows of `sql`, every column as text (`nil` for NULL).
    func rows(_ sql: String) throws -> [[String]] {
        let connection = try PostgresConnection(url)
        defer { connection.close() }
        return try connection.queryText(sql).map { $0.map { $0 ?? "nil" } }
    }

    /// The server configuration of `uploadTestConfig` with the `shop` app's
    /// sink in this database (and the `other` app's too).
    var serverConfig: String {
        uploadTestConfig.replacingOccurrences(
            of: #""auth": { "anon-user": {}, "local-userpass": {}, "api-key": {} },"#,
            with:
                #""auth": { "anon-user": {}, "local-userpass": {}, "api-key": {} }, "sink": { "kind": "postgres", "connection": "\#(url)" },"#
        )
    }
}

/// haproxy (from INGEST_TEST_HAPROXY) in front of ingest servers on
/// 127.0.0.1, running the configuration of Docs/Deployment.md §4
/// (``DeploymentHAProxyConfig``); its log (stdout) goes to `haproxy.log` in
/// its directory. Killed by PID on release.
final class HAProxyProcess {
    let process = Process()
    let directory: TemporaryDirectory
    let port: UInt16

    init(backends: [UInt16]) throws {
        guard let binary = ProcessInfo.processInfo.environment["INGEST_TEST_HAPROXY"] else {
            throw TestSupportError("INGEST_TEST_HAPROXY is not set")
        }
        directory = try TemporaryDirectory("e2e")
        port = try freeLoopbackPort()
        let config = try DeploymentHAProxyConfig.forTest(port: port, backends: backends)
        let path = directory.path + "/haproxy.cfg"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-db", "-f", path]
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: logPath)
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when it accepts connections (bounded).
        let deadline = monotonicNow() + 10
        while monotonicNow() < deadline {
            if (try? IngestTestServer.call(port: port, "GET", "/healthz", timeout: 2))?.status == 200 { return }
            usleep(100_000)
        }
        stop()
        throw TestSupportError("haproxy did not start on port \(port)")
    }

    deinit {
        stop()
        if let keep = ProcessInfo.processInfo.environment["INGEST_TEST_KEEP_HAPROXY_LOG"] {
            try? FileManager.default.removeItem(atPath: keep)
            try? FileManager.default.copyItem(atPath: logPath, toPath: keep)
        }
    }

    /// haproxy's request log (`option httplog`).
    var logPath: String { directory.path + "/haproxy.log" }

    /// Requests of the log that haproxy retried (the retries field of
    /// `act/fe/be/srv/retries`, `+` when redispatched to another server).
    func retriedRequests() -> Int {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { line in
            // The timers Tq/Tw/Tc/Tr/Ta come first, the connection counts second.
            let fields = line.split(separator: " ").map { $0.split(separator: "/") }.filter { parts in
                parts.count == 5 && parts.dropLast().allSatisfy { Int($0) != nil }
            }
            guard fields.count >= 2 else { return false }
            let retries = fields[1][4].hasPrefix("+") ? fields[1][4].dropFirst() : fields[1][4]
            return (Int(retries) ?? 0) > 0
        }.count
    }

    /// Waits (at most `timeout` seconds) until haproxy's log says the
    /// `index`th server of the configuration is UP for the `count`th time
    /// (its health checks passed after a restart). Returns whether it did.
    func waitUntilUp(server index: Int, count: Int, timeout: Double = 15) -> Bool {
        let config = (try? String(contentsOfFile: directory.path + "/haproxy.cfg", encoding: .utf8)) ?? ""
        let names = config.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            return words.first == "server" && words.count >= 2 ? String(words[1]) : nil
        }
        guard index < names.count else { return false }
        let needle = "/\(names[index]) is UP"
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if log.components(separatedBy: needle).count - 1 >= count { return true }
            usleep(50_000)
        }
        return false
    }

    /// Kills haproxy by PID (idempotent).
    func stop() {
        reap(process, within: 0)
    }
}
