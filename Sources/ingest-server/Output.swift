#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to a file descriptor unbuffered, so tests and supervisors
/// reading a pipe see each line at once.
func emit(_ text: String, to fd: Int32 = 1) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
    }
}

/// Ends the process with `status` (inside a `ParsableCommand`, `exit` is
/// swift-argument-parser's `exit(withError:)`).
func exitProcess(_ status: Int32) -> Never {
    exit(status)
}
