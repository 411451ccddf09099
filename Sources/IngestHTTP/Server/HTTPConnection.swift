/// The state of one client connection. Owned and touched only by the event
/// loop thread.
final class HTTPConnection {
    /// The epoll key of this connection (never reused while the server runs).
    let id: UInt64
    /// The socket.
    let fd: Int32
    /// Parses this connection's request bytes.
    var parser: HTTPRequestParser
    /// Bytes to send; the first `outputIndex` are already sent.
    var output: [UInt8] = []
    var outputIndex = 0
    /// A handler is running for this connection's current request; parsing of
    /// pipelined requests waits so responses stay in request order.
    var inFlight = false
    /// The current request's facts needed to write its response.
    var current = CurrentRequest()
    /// Close once the output is sent (error, `Connection: close`, HTTP/1.0, shutdown).
    var closeAfterFlush = false
    /// The peer shut down its sending side.
    var readEOF = false
    /// Our side is shut down; input is read and discarded until EOF or the
    /// deadline, so the peer sees the last response rather than a reset.
    var lingering = false
    var lingerDeadline: UInt64 = 0
    /// Responses sent on this connection.
    var requestsServed = 0
    /// Monotonic nanoseconds of the last read or write progress.
    var lastActivity: UInt64
    /// When the current request head started arriving.
    var headStarted: UInt64
    /// The parser phase seen last, to notice when a head starts.
    var lastPhase = HTTPRequestParser.Phase.idle
    /// The epoll events currently registered.
    var interest: UInt32 = 0

    struct CurrentRequest {
        var method = ""
        var path = ""
        var routePattern: String?
        var isHead = false
        var keepAlive = true
        var http10 = false
        var started: UInt64 = 0
        var requestBodyBytes = 0
    }

    init(id: UInt64, fd: Int32, limits: HTTPRequestParser.Limits, now: UInt64) {
        self.id = id
        self.fd = fd
        self.parser = HTTPRequestParser(limits: limits)
        self.lastActivity = now
        self.headStarted = now
    }

    /// Bytes queued but not yet sent.
    var outputPending: Int { output.count - outputIndex }
}
