#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The self-pipe that turns SIGTERM and SIGINT into a readable byte on the
/// event loop: the handler only calls `write`, which is async-signal-safe.
enum SignalPipe {
    // Written once in `install` before the handler is installed, then only read
    // by the handler; a signal handler cannot reach anything but globals.
    nonisolated(unsafe) private static var writeFD: Int32 = -1
    nonisolated(unsafe) private static var readFD: Int32 = -1

    /// Installs the handler for `signals` (once per process) and returns the
    /// pipe's read end for the event loop.
    static func install(_ signals: [Int32]) throws -> Int32 {
        if readFD < 0 {
            var fds: [Int32] = [-1, -1]
            guard pipe2(&fds, O_NONBLOCK | O_CLOEXEC) == 0 else {
                throw HTTPServerError(.eventLoop, "Could not create the signal pipe.", errno: errno)
            }
            readFD = fds[0]
            writeFD = fds[1]
        }
        for signo in signals {
            let rc = dataingest_install_signal_handler(signo) { _ in
                let saved = errno
                var byte: UInt8 = 1
                _ = write(SignalPipe.writeFD, &byte, 1)
                errno = saved
            }
            guard rc == 0 else {
                throw HTTPServerError(.eventLoop, "Could not install the handler for signal \(signo).", errno: errno)
            }
        }
        return readFD
    }

    /// Reads and returns how many signals arrived since the last call.
    static func drain(_ fd: Int32) -> Int {
        var count = 0
        var bytes = [UInt8](repeating: 0, count: 64)
        while true {
            let n = read(fd, &bytes, bytes.count)
            if n > 0 { count += n } else if n < 0 && errno == EINTR { continue } else { break }
        }
        return count
    }
}
