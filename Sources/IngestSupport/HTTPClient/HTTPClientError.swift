/// A failure of ``HTTPClientConnection``: no complete answer arrived. The
/// message names the peer and what happened; callers (the sync transport,
/// the ClickHouse client) map it to their own error type and add their hint.
///
/// ```swift
/// do { _ = try HTTPClientConnection.connect(host: "127.0.0.1", port: 9, name: "127.0.0.1:9", timeout: 5) }
/// catch { print(error.code, error.errno ?? 0, error.message) }
/// ```
package struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, as an extensible code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        package let rawValue: String
        /// Creates a code with the given name.
        package init(_ rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        package var description: String { rawValue }

        /// The host name did not resolve (`getaddrinfo` failed).
        package static let hostNotFound = Code("hostNotFound")
        /// Nothing listens at the address (`ECONNREFUSED`) or it is unreachable.
        package static let connectionRefused = Code("connectionRefused")
        /// The peer closed or reset the connection before the answer was complete.
        package static let connectionClosed = Code("connectionClosed")
        /// Connecting, sending or reading took longer than the timeout.
        package static let timedOut = Code("timedOut")
        /// The answer is not valid HTTP/1.1 (or exceeds the size limits).
        package static let invalidResponse = Code("invalidResponse")
        /// The request cannot be sent (a header field with a line break).
        package static let invalidRequest = Code("invalidRequest")
        /// ``HTTPClientConnection/cancel()`` was called.
        package static let cancelled = Code("cancelled")
        /// Another system call failed; see ``HTTPClientError/errno``.
        package static let io = Code("io")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened, naming the peer.
    package var message: String
    /// The `errno` of the failing system call, if one failed.
    package var errno: Int32?

    /// Creates an error with a code and, for a failed system call, its `errno`.
    package init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// The code, the message and the `errno`, for logs.
    package var description: String {
        "HTTPClientError(\(code)): \(message)" + (errno.map { " (errno \($0))" } ?? "")
    }
}
