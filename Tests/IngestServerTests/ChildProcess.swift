#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestTestSupport

/// A child process run to its end within a time bound (killed by PID
/// past it), its standard output and error in a file of `directory`.
struct ChildProcess {
    /// The exit status (after a kill, the signal's).
    var status: Int32
    /// Standard output (and standard error with `mergingErrors`).
    var output: String
    /// Whether the bound passed and the process was killed.
    var timedOut: Bool
    /// Seconds it ran.
    var seconds: Double

    /// Runs `executable` with `arguments` in `directory`; `environment`
    /// entries are added to the test's own environment. Standard error goes
    /// into the output with `mergingErrors`, else to `<name>.err` there.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        in directory: TemporaryDirectory, name: String, timeout: Double,
        mergingErrors: Bool = true
    ) throws -> ChildProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outputPath = directory.path + "/\(name).log"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        if mergingErrors {
            process.standardError = process.standardOutput
        } else {
            _ = FileManager.default.createFile(atPath: outputPath + ".err", contents: nil)
            process.standardError = FileHandle(forWritingAtPath: outputPath + ".err")
        }
        let started = monotonicNow()
        try process.run()
        let exited = waitForExit(process, timeout: timeout)
        if exited == nil { reap(process, within: 0) }
        return ChildProcess(
            status: exited ?? (process.isRunning ? -1 : process.terminationStatus),
            output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "",
            timedOut: exited == nil, seconds: monotonicNow() - started)
    }
}
