import Foundation
import IngestCore

/// Sends one HTTP request to the server. ``HTTPClientTransport`` (plain
/// sockets) is the default for `http://` base URLs and
/// ``URLSessionTransport`` for `https://` (see
/// ``App/Configuration/transportKind``); tests wrap one to inject faults,
/// and another transport can replace it through ``App/Configuration/transport``.
///
/// ```swift
/// struct FailingFirst: SyncTransport {
///     let inner = URLSessionTransport()
///     func send(_ request: TransportRequest) async throws -> TransportResponse {
///         try await inner.send(request)
///     }
/// }
/// ```
public protocol SyncTransport: Sendable {
    /// Sends `request` and returns the server's answer, whatever its status.
    /// Throws only when no answer arrived (connection refused or reset,
    /// timeout); the session retries those with backoff.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// One HTTP request.
public struct TransportRequest: Sendable {
    /// `GET`, `POST`, `DELETE`.
    public var method: String
    /// The full URL.
    public var url: URL
    /// Header fields.
    public var headers: [String: String]
    /// The body, if any.
    public var body: Data?
    /// Seconds to wait for the answer.
    public var timeout: TimeInterval

    /// Creates a request.
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: TimeInterval = 60) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// One HTTP response.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// Creates a response; header names are lowercased.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
    }

    /// `Retry-After` in seconds, if present and numeric.
    public var retryAfterSeconds: Double? {
        headers["retry-after"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The server's `{"error", "error_code"}` body (``ErrorBody``), if it has one.
    var serverError: (message: String, code: String)? {
        guard let error = try? ErrorBody(jsonBody: body) else { return nil }
        return (error.message, error.code)
    }
}

/// A transport failure: no answer from the server. The session treats every
/// transport failure alike (back off, retry); ``code`` and ``errno`` say
/// what happened, for logs and error handlers.
///
/// ```swift
/// catch let error as TransportError where error.code == .timedOut { ... }
/// ```
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, as an extensible code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let rawValue: String
        /// Creates a code with the given name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not classified (for example an error of `URLSession`).
        public static let other = Code("other")
        /// The host name did not resolve (`getaddrinfo` failed).
        public static let hostNotFound = Code("hostNotFound")
        /// Nothing listens at the address (`ECONNREFUSED`) or it is unreachable.
        public static let connectionRefused = Code("connectionRefused")
        /// The server closed or reset the connection before the answer was complete.
        public static let connectionClosed = Code("connectionClosed")
        /// Connecting, sending or reading took longer than the timeout.
        public static let timedOut = Code("timedOut")
        /// The answer is not valid HTTP/1.1 (or exceeds the size limits).
        public static let invalidResponse = Code("invalidResponse")
        /// The URL cannot be sent by this transport (for example `https` on the socket transport).
        public static let unsupportedURL = Code("unsupportedURL")
        /// The calling task was cancelled.
        public static let cancelled = Code("cancelled")
        /// Another system call failed; see ``TransportError/errno``.
        public static let io = Code("io")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened.
    public var message: String
    /// The `errno` of the failing system call, if one failed.
    public var errno: Int32?

    /// Creates an error of code ``Code/other``.
    public init(_ message: String) {
        self.init(.other, message)
    }

    /// Creates an error with a code and, for a failed system call, its `errno`.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String {
        "TransportError(\(code)): \(message)" + (errno.map { " (errno \($0))" } ?? "")
    }
}
