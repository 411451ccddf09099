#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What a finished child process printed, and its exit status.
package struct CommandResult: Sendable, Equatable {
    /// The exit status (for `ingest-server`: 0 success, 1 failure, 2 usage error).
    package var status: Int32
    /// Standard output text (with standard error too, for ``runTool(_:_:timeout:)``);
    /// invalid UTF-8 is replaced, here and in ``errorOutput``.
    package var output: String
    /// Standard error text.
    package var errorOutput: String
    /// Standard output as bytes, for a tool that prints binary data.
    package var outputBytes: [UInt8]
    /// Whether a signal ended the process; ``status`` is then the signal's number.
    package var killedBySignal: Bool
}

/// Runs `executable` to completion, bounded by `timeout` seconds (then
/// killed by PID and failed), and returns what it printed; with
/// `mergingOutput`, standard error goes into ``CommandResult/output`` too.
/// `input` is its standard input (empty: /dev/null).
///
/// The output goes to files, never pipes: reading a pipe to its end would
/// also wait for any other process that inherited the pipe's write end (a
/// daemon started at the same moment), with no bound.
package func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    directory: String? = nil, input: [UInt8] = [], mergingOutput: Bool = false, timeout: Double
) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let scratch = try TemporaryDirectory("command")
    let inPath = scratch.path("stdin"), outPath = scratch.path("stdout"), errPath = scratch.path("stderr")
    _ = FileManager.default.createFile(atPath: inPath, contents: Data(input))
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let output = FileHandle(forWritingAtPath: outPath)
    process.standardInput = FileHandle(forReadingAtPath: inPath)
    process.standardOutput = output
    process.standardError = mergingOutput ? output : FileHandle(forWritingAtPath: errPath)
    try process.run()
    guard let (status, bySignal) = waitForTermination(process, timeout: timeout) else {
        reap(process, within: 0)
        throw TestSupportError("\(executable) \(arguments) did not finish within \(timeout) s")
    }
    let bytes = (try? Data(contentsOf: URL(fileURLWithPath: outPath))).map { [UInt8]($0) } ?? []
    return CommandResult(
        status: status,
        output: String(decoding: bytes, as: UTF8.self),
        errorOutput: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data(), as: UTF8.self),
        outputBytes: bytes, killedBySignal: bySignal)
}

/// Runs an installed tool (found in `PATH`) to completion; nil if it is not
/// installed. The output is standard output and standard error together.
///
/// ```swift
/// guard let curl = try TestEnvironment.require(runTool("curl", ["-sS", url]), "curl") else { return }
/// ```
package func runTool(_ name: String, _ arguments: [String], timeout: Double = 20) throws -> (status: Int32, output: String)? {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let paths = searchPath.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/bin/\(name)", "/usr/local/bin/\(name)"]
    guard let path = paths.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    let result = try runProcess(path, arguments, mergingOutput: true, timeout: timeout)
    return (result.status, result.output)
}

/// Runs the built `ingest-server` with `arguments` to completion (the
/// `apikey` subcommand, `--help`, a usage error), in `directory` and
/// `environment` (nil: the test's).
package func runIngestServer(
    _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    timeout: Double = 60
) throws -> CommandResult {
    try runProcess(
        try builtExecutable("ingest-server"), arguments, environment: environment, directory: directory,
        timeout: timeout)
}
