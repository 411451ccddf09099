#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestTestSupport
import Testing

/// The command that restarts the test PostgreSQL must not hand the test
/// process's pipes to the daemon: a daemon holding a pipe's write end keeps
/// whoever reads that pipe to its end waiting until the daemon stops.
@Suite("A detached command's descriptors")
struct DetachedCommandTests {
    @Test("a pipe the test process holds is not open in the command")
    func pipesAreNotInherited() throws {
        let pipe = Pipe()
        let writer = pipe.fileHandleForWriting.fileDescriptor
        #expect(fcntl(writer, F_GETFD) & FD_CLOEXEC == 0, "Foundation's Pipe is close-on-exec here: the test proves nothing")
        // Exit status 0 when the descriptor is closed in the child, 1 when it is inherited.
        let status = try DetachedCommand.run(["/bin/sh", "-c", "test ! -e /proc/self/fd/\(writer)"])
        #expect(status == 0, "the command inherited the pipe's write end (wait status \(status))")
        let open = try DetachedCommand.run(["/bin/sh", "-c", "test -e /proc/self/fd/1"])
        #expect(open == 0, "standard output is not open in the command (wait status \(open))")
    }
}

/// `runProcess`, which every test reading a tool's output uses: bytes in and
/// out unchanged, and a tool that does not finish fails the test in bounded
/// time instead of holding the run.
@Suite("Running a tool to completion")
struct RunProcessTests {
    @Test("standard input and binary output pass through unchanged")
    func bytesPassThrough() throws {
        let bytes: [UInt8] = [0, 255, 10, 13, 0xC3, 0x28] + Array(repeating: 7, count: 100_000)
        let result = try runProcess("/bin/cat", [], input: bytes, timeout: 30)
        #expect(result.status == 0)
        #expect(result.outputBytes == bytes)
    }

    @Test("invalid UTF-8 on either stream is replaced, not lost; a signal is told apart from an exit")
    func textAndSignals() throws {
        let result = try runProcess("/bin/sh", ["-c", #"printf 'out \303\050\n'; printf 'err \303\050\n' >&2; exit 3"#], timeout: 30)
        #expect(result.status == 3 && !result.killedBySignal)
        #expect(result.output == "out \u{FFFD}(\n")
        #expect(result.errorOutput == "err \u{FFFD}(\n")
        let killed = try runProcess("/bin/sh", ["-c", "kill -KILL $$"], timeout: 30)
        #expect(killed.killedBySignal && killed.status == SIGKILL, "\(killed)")
    }

    @Test("a tool's exit is seen while a process it started still holds what it inherited")
    func anExitIsSeenDespiteAGrandchild() throws {
        let start = monotonicNow()
        // The background sleep inherits the shell's end of Foundation's
        // socket pair: Foundation alone would report the shell running for 30 s.
        let result = try runProcess("/bin/sh", ["-c", "sleep 30 & echo $!; exit 5"], timeout: 20)
        if let grandchild = Int32(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) { kill(grandchild, SIGKILL) }
        #expect(result.status == 5)
        #expect(monotonicNow() - start < 15, "the shell's exit was seen only when its background child ended")
    }

    @Test("a tool that outlives its bound is killed by PID and the call throws")
    func aHungToolIsBounded() throws {
        let start = monotonicNow()
        #expect(throws: TestSupportError.self) { try runProcess("/bin/sleep", ["60"], timeout: 0.5) }
        #expect(monotonicNow() - start < 15)
    }
}
