#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation

// The client's resident memory while draining a backlog (issue 6: 5 million
// objects, target under 64 MiB). Three processes: the release
// `ingest-server` (development mode, SQLite sink at synchronous=FULL) and
// this binary twice more as the client:
//
// 1. `commit`: logs in anonymously, suspends its sync session (nothing is
//    uploaded, as with the server unreachable), commits the backlog of the
//    seed's WeatherSensor in transactions of 1,000 and exits;
// 2. `drain`: a new client process on the same metadata directory restores
//    the user, and its session uploads the whole backlog. This process reads
//    the drain process's VmRSS from /proc/PID/status every 50 ms; the drain
//    process reports its own VmHWM when the server has acknowledged everything.
//
// Size: INGEST_BENCH_BACKLOG_OBJECTS (default 5,000,000; the figure's name
// says the size that ran).

/// The environment variable that makes this binary the client of the backlog benchmark.
private let backlogRoleVariable = "INGEST_BENCH_BACKLOG_ROLE"

func backlogBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    if let role = environment[backlogRoleVariable] { backlogClient(role: role, environment: environment) }
    let count = max(1_000, Int(environment["INGEST_BENCH_BACKLOG_OBJECTS"] ?? "") ?? 5_000_000) / 1_000 * 1_000
    if count != 5_000_000 {
        FileHandle.standardError.write(
            Data("ingest-bench: backlog: \(count) objects (INGEST_BENCH_BACKLOG_OBJECTS), not the 5,000,000 of issue 6\n".utf8))
    }
    let directory = NSTemporaryDirectory() + "ingest-bench-backlog-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let server = try ServerBenchProcess(directory: directory)
    defer { server.stop() }
    let childEnvironment = [
        "INGEST_BENCH_BACKLOG_PORT": String(server.port), "INGEST_BENCH_BACKLOG_APP": server.appId,
        "INGEST_BENCH_BACKLOG_DIR": directory + "/client", "INGEST_BENCH_BACKLOG_OBJECTS": String(count),
    ]

    // 1. Commit the backlog with the session suspended.
    let commit = try BacklogChild(role: "commit", environment: childEnvironment)
    _ = try commit.wait(timeoutSeconds: 1_800) { _ in }
    guard let commitLine = commit.output.first(where: { $0.hasPrefix("committed ") }),
        let commitSeconds = Double(commitLine.split(separator: " ").last ?? "")
    else {
        throw ServerBenchError("the committing client failed: \(commit.output.joined(separator: " | "))")
    }
    guard server.count("WeatherSensor") <= 0 else { throw ServerBenchError("objects reached the server while suspended") }

    // 2. A new client process drains it; its resident memory is sampled.
    let drain = try BacklogChild(role: "drain", environment: childEnvironment)
    var peakRSS = 0
    var samples = 0
    let drainSeconds = try drain.wait(timeoutSeconds: 3_600) { pid in
        let rss = residentKiB(pid: pid, field: "VmRSS:")
        if rss > 0 { peakRSS = max(peakRSS, rss); samples += 1 }
    }
    guard let drainLine = drain.output.first(where: { $0.hasPrefix("drained ") }) else {
        throw ServerBenchError("the draining client failed: \(drain.output.joined(separator: " | "))")
    }
    let fields = drainLine.split(separator: " ")
    let ownPeak = fields.count >= 3 ? Int(fields[2]) ?? 0 : 0
    let stored = server.count("WeatherSensor")
    guard stored == Int64(count) else { throw ServerBenchError("the server holds \(stored) of \(count) objects after the drain") }
    let peakMiB = Double(max(peakRSS, ownPeak)) / 1024

    return [
        Figure(
            group: "backlog",
            name: "client peak resident memory draining a backlog of \(count) WeatherSensor (VmHWM, \(samples) VmRSS samples)",
            value: peakMiB, unit: "MiB", baseline: nil, target: .atMost(64)),
        Figure(
            group: "backlog", name: "drain rate of that backlog (client process start to all acknowledged)",
            value: Double(count) / drainSeconds, unit: "objects/s", baseline: nil, target: nil),
        Figure(
            group: "backlog", name: "the backlog's commit rate (session suspended, txn of 1,000)",
            value: Double(count) / commitSeconds, unit: "objects/s", baseline: nil, target: nil),
    ]
}

/// A KiB field (`VmRSS:`, `VmHWM:`) of /proc/PID/status, 0 if unreadable.
private func residentKiB(pid: Int32, field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field) {
        return Int(line.dropFirst(field.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
    }
    return 0
}

/// This binary started again as a backlog client (`--filter backlog` with
/// the role in the environment); stopped by PID.
private final class BacklogChild {
    let process = Process()
    private let out = Pipe()
    private(set) var output: [String] = []

    init(role: String, environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--filter", "backlog"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            .merging([backlogRoleVariable: role]) { $1 }
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Calls `sample` with the PID every 50 ms until the process exits
    /// (killed after `timeoutSeconds`); returns the seconds it ran.
    func wait(timeoutSeconds: Double, sample: (Int32) -> Void) throws -> Double {
        let start = nowNanoseconds()
        let deadline = start + UInt64(timeoutSeconds * 1e9)
        var text: [UInt8] = []
        let fd = out.fileHandleForReading.fileDescriptor
        while true {
            sample(process.processIdentifier)
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 50) > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { text += chunk[..<n] } else { break }  // end of file: the child exited
            }
            guard nowNanoseconds() < deadline else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw ServerBenchError("the backlog client did not finish within \(Int(timeoutSeconds)) s")
            }
        }
        process.waitUntilExit()
        let seconds = Double(nowNanoseconds() - start) / 1e9
        output = String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init)
        return seconds
    }
}

/// The client side, in its own process: `commit` or `drain` (see the top of the file).
private func backlogClient(role: String, environment: [String: String]) -> Never {
    func finish(_ line: String, _ code: Int32) -> Never {
        print(line)
        fflush(nil)
        exit(code)
    }
    guard let port = environment["INGEST_BENCH_BACKLOG_PORT"], let appId = environment["INGEST_BENCH_BACKLOG_APP"],
        let directory = environment["INGEST_BENCH_BACKLOG_DIR"],
        let count = Int(environment["INGEST_BENCH_BACKLOG_OBJECTS"] ?? "")
    else {
        finish("failed: missing INGEST_BENCH_BACKLOG_* variables", 2)
    }
    var configuration = App.Configuration(baseURL: URL(string: "http://127.0.0.1:\(port)")!, metadataDirectory: directory)
    configuration.sync.maximumBackoff = 1
    let app = App(id: appId, configuration: configuration)
    let start = nowNanoseconds()
    do {
        switch role {
        case "commit":
            let user = try blocking { try await app.login(credentials: .anonymous) }
            user.session.suspend()
            var config = user.flexibleSyncConfiguration()
            config.objectTypes = [SyncBenchSensor.self]
            try commitWeatherSensors(count, into: Realm(configuration: config))
            finish("committed \(count) \(Double(nowNanoseconds() - start) / 1e9)", 0)
        case "drain":
            guard let user = app.currentUser else { finish("failed: no logged-in user in \(directory)", 1) }
            try blocking { try await user.session.wait(for: .upload, timeout: 3_000) }
            finish("drained \(count) \(residentKiB(pid: getpid(), field: "VmHWM:"))", 0)
        default:
            finish("failed: unknown role \(role)", 2)
        }
    } catch {
        finish("failed: \(error)", 1)
    }
}
