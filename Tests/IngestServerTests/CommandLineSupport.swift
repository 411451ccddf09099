#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What a finished `ingest-server` run printed, and its exit status.
struct CommandResult: Sendable, Equatable {
    /// The exit status (0 success, 1 failure, 2 usage error).
    var status: Int32
    /// Standard output text.
    var output: String
    /// Standard error text.
    var errorOutput: String
}

/// Runs the built `ingest-server` with `arguments` in `directory`, in
/// `environment` (nil: the test's), waits at most `timeout` seconds (then
/// kills it by PID and fails), and returns what it printed.
func runIngestServer(_ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
                     timeout: Double = 60) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try ingestServerExecutable())
    process.arguments = arguments
    if let environment { process.environment = environment }
    let scratch = try EndToEndDirectory()
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let outPath = scratch.path + "/stdout", errPath = scratch.path + "/stderr"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    try process.run()
    let deadline = endToEndNow() + timeout
    while process.isRunning && endToEndNow() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw EndToEndError("ingest-server \(arguments) did not finish within \(timeout) s")
    }
    return CommandResult(status: process.terminationStatus,
                         output: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                         errorOutput: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}
