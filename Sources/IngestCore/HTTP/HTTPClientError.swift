/// A failure of ``HTTPClientConnection``: no complete answer arrived. The
/// message names the peer and what happened; callers (the sync transport,
/// the ClickHouse client) map it to their own error type and add their hint.
///
/// ```swift
/// do { _ = try HTTPClientConnection.connect(host: "127.0.0.1", port: 9, name: "127.0.0.1:9", timeout: 5) }
/// catch { print(error.code, error.errno ?? 0, error.message) }
/// ```
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, as an extensible code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let rawValue: String
        /// Creates a code with the given name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The host name did not resolve (`getaddrinfo` failed).
        public static let hostNotFound = Code("hostNotFound")
        /// Nothing listens at the address (`ECONNREFUSED`) or it is unreachable.
        public static let connectionRefused = Code("connectionRefused")
        /// The peer closed or reset the connection before the answer was complete.
        public static let connectionClosed = Code("connectionClosed")
        /// Connecting, sending or reading took longer than the timeout.
        public static let timedOut = Code("timedOut")
        /// The answer is not valid HTTP/1.1 (or exceeds the size limits).
        public static let invalidResponse = Code("invalidResponse")
        /// The request cannot be sent (a header field with a line break).
        public static let invalidRequest = Code("invalidRequest")
        /// ``HTTPClientConnection/cancel()`` was called.
        public static let cancelled = Code("cancelled")
        /// Another system call failed; see ``HTTPClientError/errno``.
        public static let io = Code("io")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, naming the peer.
    public var message: String
    /// The `errno` of the failing system call, if one failed.
    public var errno: Int32?

    /// Creates an error with a code and, for a failed system call, its `errno`.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// The code, the message and the `errno`, for logs.
    public var description: String {
        "HTTPClientError(\(code)): \(message)" + (errno.map { " (errno \($0))" } ?? "")
    }
}
