#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The executable `name` built next to the test bundle (`swift build`
/// puts every product in one folder); for `ingest-server`,
/// `INGEST_SERVER_BINARY` overrides it.
package func builtExecutable(_ name: String) throws -> String {
    if name == "ingest-server", let override = ProcessInfo.processInfo.environment["INGEST_SERVER_BINARY"] { return override }
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var candidates = [
        exe.deletingLastPathComponent().appendingPathComponent(name).path,
        argv0.deletingLastPathComponent().appendingPathComponent(name).path,
        // An .xctest bundle directory: the binary is next to the bundle.
        argv0.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name).path,
    ]
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent(name).path)
    }
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw TestSupportError("\(name) not found in \(candidates); build it with `swift build`")
    }
    return found
}

/// Reads a child's output line by line with a time bound, keeping what it
/// read past the line for the next call.
package final class LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []

    package init(fd: Int32) { self.fd = fd }

    /// The next line (without its newline), waiting at most `timeout`
    /// seconds. Throws when the time is up or the output closed first.
    package func next(timeout: Double) throws -> String {
        let deadline = monotonicNow() + timeout
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline - monotonicNow()
            guard remaining > 0 else { throw TestSupportError("timed out after \(timeout) s waiting for a line") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(min(remaining, 1) * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { throw TestSupportError("the output closed before a whole line") }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }
}

/// Waits at most `timeout` seconds for `process` to exit; its status (as
/// `terminationStatus` gives it: the exit code, or the signal that ended
/// it), or `nil` if it still runs.
///
/// Asks the kernel as well as Foundation: Foundation learns of an exit only
/// when every holder of the child's end of a socket pair has closed it, and
/// a grandchild that inherited it (a daemon the child started) keeps it
/// open. `waitid` with `WNOWAIT` reads the status and leaves the child for
/// Foundation to reap.
package func waitForExit(_ process: Process, timeout: Double) -> Int32? {
    waitForTermination(process, timeout: timeout)?.status
}

/// ``waitForExit(_:timeout:)``, also telling whether a signal ended the
/// process (then `status` is the signal's number).
package func waitForTermination(_ process: Process, timeout: Double) -> (status: Int32, bySignal: Bool)? {
    let deadline = monotonicNow() + timeout
    while true {
        if !process.isRunning { return (process.terminationStatus, process.terminationReason == .uncaughtSignal) }
        if let ended = terminationWithoutReaping(process.processIdentifier) {
            // Foundation normally sees it within a millisecond; give it that
            // time, so that callers may read `terminationStatus` next.
            let settle = monotonicNow() + 2
            while process.isRunning && monotonicNow() < settle { usleep(1_000) }
            return ended
        }
        if monotonicNow() >= deadline { return nil }
        usleep(10_000)
    }
}

/// How child `pid` ended if it has, without reaping it.
private func terminationWithoutReaping(_ pid: pid_t) -> (status: Int32, bySignal: Bool)? {
    var info = siginfo_t()
    guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, info._sifields._sigchld.si_pid == pid else {
        return nil
    }
    // CLD_EXITED: si_status is the exit code; otherwise the signal's number.
    return (info._sifields._sigchld.si_status, info.si_code != CLD_EXITED)
}

/// Waits at most `timeout` seconds for `process` to exit by itself; if it
/// has not, kills it by PID (SIGKILL) and waits at most 10 s more for
/// Foundation to see it end. True when it exited by itself, so a test
/// expects that instead of waiting on a hung child forever.
///
/// Never `waitUntilExit()` after the kill: Foundation learns of the exit when
/// the child's end of a socket pair closes, which a process that inherited
/// it keeps open, so that wait has no bound.
@discardableResult
package func reap(_ process: Process, within timeout: Double) -> Bool {
    if waitForExit(process, timeout: timeout) != nil { return true }
    kill(process.processIdentifier, SIGKILL)
    _ = waitForExit(process, timeout: 10)
    return false
}

/// Polls `condition` every 20 ms for at most `timeout` seconds (blocking:
/// for synchronous tests); its last answer.
package func eventually(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// Polls `condition` every 20 ms for at most `timeout` seconds without
/// blocking a thread of the concurrency pool; its last answer.
package func eventuallyAsync(timeout: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
        if try condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try condition()
}

/// Reads one line (without its newline) from `fd`, a byte at a time so that
/// nothing past it is consumed, waiting at most `timeout` seconds; what was
/// read when the time ran out or the output closed (possibly empty).
package func readLine(_ fd: Int32, timeout: Double) throws -> String {
    var line: [UInt8] = []
    let deadline = monotonicNow() + timeout
    while !line.contains(10) && monotonicNow() < deadline {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, 100) > 0 else { continue }
        var byte: UInt8 = 0
        let n = read(fd, &byte, 1)
        if n <= 0 { break }
        line.append(byte)
    }
    return String(decoding: line.prefix { $0 != 10 }, as: UTF8.self)
}
