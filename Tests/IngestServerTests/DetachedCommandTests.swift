#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The command that restarts the test PostgreSQL must not hand other tests'
/// pipes to the daemon: a CI run once hung for its whole bound in a test
/// reading haproxy's output while a restarted PostgreSQL held the pipe open.
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
