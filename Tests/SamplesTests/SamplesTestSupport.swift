#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport

/// A failure in the samples tests' own plumbing.
struct SamplesTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic seconds.
func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A temporary directory removed when released.
final class TemporaryDirectory {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "dataingest-samples-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// An executable built next to the test bundle.
func built(_ name: String) throws -> String {
    let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let candidates = [exe.deletingLastPathComponent().appendingPathComponent(name).path,
                      argv0.deletingLastPathComponent().appendingPathComponent(name).path,
                      argv0.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name).path]
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw SamplesTestError("\(name) not found in \(candidates); build it with `swift build`")
    }
    return found
}

/// What a finished sample process printed and returned.
struct ProcessResult {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs `executable` to completion (killed by PID after `timeout` seconds),
/// with `environment` added to this process's environment. A process killed
/// by a signal has `status` 128 + the signal's number, as in a shell.
func runProcess(_ executable: String, _ arguments: [String], in directory: String, timeout: Double = 90,
                environment: [String: String] = [:]) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let outPath = directory + "/\(UUID().uuidString).out"
    let errPath = outPath + ".err"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    try process.run()
    let deadline = monotonicNow() + timeout
    while process.isRunning && monotonicNow() < deadline { usleep(20_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw SamplesTestError("\(executable) \(arguments) did not finish within \(timeout) s")
    }
    process.waitUntilExit()
    let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let errorOutput = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    return ProcessResult(status: status, output: output, errorOutput: errorOutput)
}

/// A real development `ingest-server` on 127.0.0.1, killed by PID on release.
final class SampleServer {
    private let process = Process()
    let dataPath: String
    let port: UInt16

    init(in directory: String) throws {
        dataPath = directory + "/server-data"
        process.executableURL = URL(fileURLWithPath: try built("ingest-server"))
        process.arguments = ["--port", "0", "--data-dir", dataPath]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        var line: [UInt8] = []
        let deadline = monotonicNow() + 20
        let fd = out.fileHandleForReading.fileDescriptor
        while !line.contains(10) && monotonicNow() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            if read(fd, &byte, 1) <= 0 { break }
            line.append(byte)
        }
        let text = String(decoding: line.prefix { $0 != 10 }, as: UTF8.self)
        guard let range = text.range(of: "listening on http://127.0.0.1:"), let port = UInt16(text[range.upperBound...]) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw SamplesTestError("ingest-server did not start: '\(text)'")
        }
        self.port = port
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    var appId: String {
        ((try? String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var databasePath: String { dataPath + "/\(appId).sqlite" }

    /// The first column of each row of `sql`, as text.
    func query(_ sql: String) throws -> [String] {
        let db = try SQLiteConnection(path: databasePath, options: .init(access: .readWrite))
        let statement = try db.makeStatement(sql: sql)
        var rows: [String] = []
        while try statement.step() { rows.append(statement.text(at: 0)) }
        return rows
    }
}
