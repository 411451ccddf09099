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
    try runProcess(try ingestServerExecutable(), arguments, environment: environment, directory: directory, timeout: timeout)
}

/// Runs an installed tool (found in `PATH`); nil if it is not installed. The
/// output is standard output and standard error together.
func runTool(_ name: String, _ arguments: [String], timeout: Double = 20) throws -> (status: Int32, output: String)? {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let paths = searchPath.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/bin/\(name)", "/usr/local/bin/\(name)"]
    guard let path = paths.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    let result = try runProcess(path, arguments, mergingOutput: true, timeout: timeout)
    return (result.status, result.output)
}

/// Runs `executable` to completion (bounded by `timeout`, then killed by PID
/// and failed) and returns what it printed; with `mergingOutput`, standard
/// error goes into ``CommandResult/output`` too.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                directory: String? = nil, mergingOutput: Bool = false, timeout: Double) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let scratch = try EndToEndDirectory()
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let outPath = scratch.path + "/stdout", errPath = scratch.path + "/stderr"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let output = FileHandle(forWritingAtPath: outPath)
    process.standardOutput = output
    process.standardError = mergingOutput ? output : FileHandle(forWritingAtPath: errPath)
    try process.run()
    let deadline = endToEndNow() + timeout
    while process.isRunning && endToEndNow() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw EndToEndError("\(executable) \(arguments) did not finish within \(timeout) s")
    }
    return CommandResult(status: process.terminationStatus,
                         output: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                         errorOutput: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}
