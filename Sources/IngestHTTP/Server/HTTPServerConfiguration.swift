import Logging

/// Everything the HTTP server can be told: where to listen, how many worker
/// threads run handlers, and the limits and timeouts that protect it from
/// large, slow or idle clients. Every property has a documented default.
///
/// ```swift
/// var configuration = HTTPServerConfiguration()
/// configuration.port = 0                  // ephemeral: read server.port after start()
/// configuration.maxBodyBytes = 8 << 20
/// configuration.headerTimeout = 2
/// ```
public struct HTTPServerConfiguration: Sendable {
    /// The address to bind: an IP address or a host name. Default `127.0.0.1`
    /// (local only); use `0.0.0.0` or `::` to accept remote clients.
    public var host: String = "127.0.0.1"
    /// The TCP port. Default 9090; 0 binds an ephemeral port (see ``HTTPServer/port``).
    public var port: Int = 9090
    /// The listen backlog. Default 511.
    public var backlog: Int32 = 511
    /// Threads that run blocking handlers. Default 4.
    public var workerThreads: Int = 4
    /// Open connections above which new ones get a `503` and are closed. Default 1024.
    public var maxConnections: Int = 1024
    /// Maximum size of the request line plus header fields, in bytes; larger
    /// heads get `431` (`414` if the request line alone is larger). Default 16 KiB.
    public var maxHeaderBytes: Int = 16 * 1024
    /// Maximum number of header fields; more get `431`. Default 100.
    public var maxHeaderCount: Int = 100
    /// Maximum request body size in bytes; a larger `Content-Length` gets `413`
    /// before any body byte is read, a chunked body gets `413` when it crosses
    /// the limit. Default 64 MiB.
    public var maxBodyBytes: Int = 64 * 1024 * 1024
    /// Seconds a client has to send a complete request head, counted from its
    /// first byte (or from accepting the connection, for the first request).
    /// Protects against slow-loris clients. Default 10.
    public var headerTimeout: Double = 10
    /// Seconds the body of a request may stall between two reads. Default 30.
    public var bodyIdleTimeout: Double = 30
    /// Seconds an idle keep-alive connection stays open between requests. Default 30.
    public var keepAliveTimeout: Double = 30
    /// Seconds a response may stall because the client does not read. Default 30.
    public var writeTimeout: Double = 30
    /// Seconds graceful shutdown waits for in-flight requests before closing
    /// every connection. Default 10.
    public var shutdownGracePeriod: Double = 10
    /// Whether ``HTTPServer/run()`` shuts down gracefully on SIGTERM and
    /// SIGINT (a second signal closes everything at once). Default false: a
    /// library should not take over process signals; the executable turns it on.
    public var handleSignals: Bool = false
    /// Called once per response with its method, route, status and latency
    /// (for metrics). Runs on the event loop: it must be fast and must not block.
    public var requestObserver: (@Sendable (HTTPRequestSummary) -> Void)? = nil
    /// Where the server logs what goes wrong (handler errors at `error`,
    /// accept failures at `warning`) and signals (`notice`). Default: a
    /// logger that discards everything, so a library stays silent unless
    /// given one (`Logger(label: "my-service")` uses the handler
    /// `LoggingSystem.bootstrap` installed).
    public var logger = Logger(label: "ingest-http", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Creates a configuration with the defaults above.
    public init() {}

    var parserLimits: HTTPRequestParser.Limits {
        HTTPRequestParser.Limits(maxHeaderBytes: maxHeaderBytes, maxHeaderCount: maxHeaderCount, maxBodyBytes: maxBodyBytes)
    }
}

/// What the server reports about each response, for metrics and access logs.
public struct HTTPRequestSummary: Sendable {
    /// The request method.
    public var method: String
    /// The request path (percent-encoded).
    public var path: String
    /// The matched route pattern; nil for 404s and protocol errors. Use it as
    /// the metrics label: it has bounded cardinality, unlike the path.
    public var routePattern: String?
    /// The response status code.
    public var status: Int
    /// Seconds from the complete request to the response being queued for sending.
    public var durationSeconds: Double
    /// Bytes in the request body.
    public var requestBodyBytes: Int
    /// Bytes in the response body.
    public var responseBodyBytes: Int
}
