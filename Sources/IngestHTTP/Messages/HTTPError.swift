/// An error a handler throws to answer with a specific status and the
/// project's JSON error body `{"error": ..., "error_code": ...}`.
///
/// The server also uses it for protocol errors it detects itself (a bad
/// request line, oversized headers, a body over the limit).
///
/// ```swift
/// guard let appId = request.pathParameters["appId"] else {
///     throw HTTPError(.notFound, code: .init("app_not_found"), "No app with this id; check the app id in the URL.")
/// }
/// ```
public struct HTTPError: Error, Sendable, CustomStringConvertible, HTTPResponseConvertibleError {
    /// A machine-readable error code, extensible by other modules.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a code, e.g. `.init("invalid_session")`.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The request line, a header or the body framing is malformed.
        public static let badRequest = Code("bad_request")
        /// The request line is longer than the header limit.
        public static let uriTooLong = Code("uri_too_long")
        /// The request head is larger than the header limit.
        public static let headersTooLarge = Code("headers_too_large")
        /// The body is larger than the body limit.
        public static let bodyTooLarge = Code("body_too_large")
        /// The HTTP version is not 1.0 or 1.1.
        public static let versionNotSupported = Code("http_version_not_supported")
        /// A transfer coding other than `chunked` was used.
        public static let notImplemented = Code("not_implemented")
        /// The `Expect` header has a value other than `100-continue`.
        public static let expectationFailed = Code("expectation_failed")
        /// The client was too slow sending the request.
        public static let requestTimeout = Code("request_timeout")
        /// No route matches the path.
        public static let notFound = Code("not_found")
        /// A route matches the path but not the method.
        public static let methodNotAllowed = Code("method_not_allowed")
        /// The route switches protocols, but the request did not ask to.
        public static let upgradeRequired = Code("upgrade_required")
        /// The server is at its connection limit or shutting down.
        public static let unavailable = Code("service_unavailable")
        /// A handler failed with an unexpected error.
        public static let internalError = Code("internal_error")
    }

    /// The response status.
    public var status: HTTPStatus
    /// The machine-readable code.
    public var code: Code
    /// What happened and what to do, for people.
    public var message: String
    /// Extra response headers (e.g. `Allow`, `Retry-After`).
    public var headers: HTTPHeaders

    /// Creates an error.
    public init(_ status: HTTPStatus, code: Code, _ message: String, headers: HTTPHeaders = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "HTTP \(status.code) \(code): \(message)" }

    /// The JSON error response.
    public func httpResponse() -> HTTPResponse {
        var response = HTTPResponse.error(status, code: code.rawValue, message: message)
        for field in headers { response.headers.add(name: field.name, value: field.value) }
        return response
    }
}

/// An error that knows the HTTP response it should produce. Handlers may
/// throw any error; errors conforming to this protocol become their own
/// response, all others become a 500 `internal_error`.
public protocol HTTPResponseConvertibleError: Error {
    /// The response sent to the client for this error.
    func httpResponse() -> HTTPResponse
}

/// A failure starting or running the server (binding, listening, epoll),
/// or of the I/O of a connection handed to an upgrade session.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The host name could not be resolved to an address.
        public static let addressResolution = Code(rawValue: "address_resolution")
        /// `socket`, `bind` or `listen` failed (port in use, no permission).
        public static let bind = Code(rawValue: "bind")
        /// Creating the epoll instance, eventfd or signal pipe failed.
        public static let eventLoop = Code(rawValue: "event_loop")
        /// The server was started twice or run before it was started.
        public static let invalidState = Code(rawValue: "invalid_state")
        /// An upgraded connection's read got nothing within its timeout.
        public static let timedOut = Code(rawValue: "timed_out")
        /// An upgraded connection was used after ``HTTPUpgradedConnection/close()``.
        public static let connectionClosed = Code(rawValue: "connection_closed")
        /// A read or write of an upgraded connection failed; see ``HTTPServerError/errno``.
        public static let connectionIO = Code(rawValue: "connection_io")
    }

    /// What failed.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The `errno` of the failing system call, if any.
    public var errno: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String {
        if let errno { return "\(message) (errno \(errno))" }
        return message
    }
}
