#if canImport(Glibc)
import Glibc
#endif
import CLinux
import IngestSupport
import Logging

/// An HTTP/1.1 server on POSIX sockets: one epoll event loop thread does all
/// socket I/O without blocking; handlers run on a small worker pool and post
/// their responses back to the loop.
///
/// ```swift
/// var router = HTTPRouter()
/// router.get("/healthz") { _ in .json(#"{"status":"ok"}"#) }
/// var configuration = HTTPServerConfiguration()
/// configuration.port = 0
/// configuration.handleSignals = true
/// let server = HTTPServer(configuration: configuration, router: router)
/// try server.start()
/// print("listening on \(server.url)")
/// try server.run()          // returns after SIGTERM/SIGINT or shutdown()
/// ```
///
/// It supports keep-alive and pipelining (responses in request order),
/// `Content-Length` and chunked request bodies, `Expect: 100-continue`, limits
/// on header size, body size and connection count, timeouts for slow and
/// idle clients, and graceful shutdown.
// @unchecked Sendable: the loop state below is only touched on the thread
// running `run()` (and by `start()` before it); what other threads reach
// (`shutdown()`, posted completions) goes through the `shared` locked box and
// the eventfd.
public final class HTTPServer: @unchecked Sendable {
    /// The configuration the server was created with.
    public let configuration: HTTPServerConfiguration
    let router: HTTPRouter

    /// The port the server is bound to (meaningful after ``start()``; the
    /// real port when the configuration asked for port 0).
    public private(set) var port: Int = 0
    /// The numeric address the server is bound to, after ``start()``.
    public private(set) var boundAddress: String = ""

    /// The base URL, e.g. `http://127.0.0.1:9090` (after ``start()``).
    public var url: String {
        boundAddress.contains(":") ? "http://[\(boundAddress)]:\(port)" : "http://\(boundAddress):\(port)"
    }

    struct Completion {
        var connectionID: UInt64
        var response: HTTPResponse
        /// What an upgrade handler accepted (`response` is then the 101).
        var upgrade: AcceptedUpgrade? = nil
    }

    struct AcceptedUpgrade {
        var request: HTTPRequest
        var session: HTTPUpgradedSession
    }

    struct SharedState {
        var completions: [Completion] = []
        /// Connections handed to upgrade sessions whose session still runs.
        var upgraded: [UInt64: HTTPUpgradedConnection] = [:]
        var shutdownRequested = false
        /// The eventfd other threads write to in ``wake()``: closed under the
        /// lock, so a late `shutdown()` or completion never writes to a closed
        /// (or reused) descriptor.
        var wakeFD: Int32 = -1
    }

    let shared = LockedBox(SharedState())

    // Loop state.
    var state = RunState.created
    var epollFD: Int32 = -1
    var listenFD: Int32 = -1
    var wakeFD: Int32 = -1
    var signalFD: Int32 = -1
    var pool: WorkerPool?
    /// Runs async handlers on `pool`'s threads (see ``WorkerPoolTaskExecutor``).
    var asyncExecutor: WorkerPoolTaskExecutor?
    var connections: [UInt64: HTTPConnection] = [:]
    var nextConnectionID: UInt64 = 16
    var draining = false
    /// The grace period ended with connections still open.
    var forcedStop = false
    var drainDeadline: UInt64 = 0
    var listenerPausedUntil: UInt64?
    var now: UInt64 = 0
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    var cachedDate: (second: Int, text: String) = (-1, "")

    enum RunState {
        case created, started, running, stopped
    }

    static let listenerKey: UInt64 = 1
    static let wakeKey: UInt64 = 2
    static let signalKey: UInt64 = 3
    /// Stop reading a connection's next requests while this much output is unsent.
    static let outputHighWater = 1 << 20

    /// Creates a server; nothing is bound until ``start()``.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration(), router: HTTPRouter) {
        self.configuration = configuration
        self.router = router
    }

    deinit {
        closeResources()
        readBuffer.deallocate()
    }

    /// Binds and listens, creates the event loop and the worker threads.
    /// After it returns, ``port`` and ``url`` are known and clients may
    /// connect (they are served once ``run()`` is called).
    public func start() throws {
        guard state == .created else {
            throw HTTPServerError(.invalidState, "The server was already started.")
        }
        signal(SIGPIPE, SIG_IGN)
        do {
            try bind()
            epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
            guard epollFD >= 0 else { throw HTTPServerError(.eventLoop, "epoll_create1 failed.", errno: errno) }
            wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
            guard wakeFD >= 0 else { throw HTTPServerError(.eventLoop, "eventfd failed.", errno: errno) }
            shared.withLock { [wakeFD] in $0.wakeFD = wakeFD }
            try register(listenFD, key: Self.listenerKey, events: dataingest_epollin())
            try register(wakeFD, key: Self.wakeKey, events: dataingest_epollin())
            if configuration.handleSignals {
                signalFD = try SignalPipe.install([SIGTERM, SIGINT])
                try register(signalFD, key: Self.signalKey, events: dataingest_epollin())
            }
        } catch {
            closeResources()
            throw error
        }
        let pool = WorkerPool(threads: configuration.workerThreads, name: "http-worker")
        self.pool = pool
        asyncExecutor = WorkerPoolTaskExecutor(pool: pool)
        state = .started
    }

    /// Runs the event loop on the calling thread until shutdown completes:
    /// after ``shutdown()`` (or SIGTERM/SIGINT with ``HTTPServerConfiguration/handleSignals``)
    /// it stops accepting, lets in-flight requests finish for up to the grace
    /// period, closes every connection and returns.
    public func run() throws {
        guard state == .started else {
            throw HTTPServerError(.invalidState, "run() needs a started server that is not running yet.")
        }
        state = .running
        defer {
            // Handlers still running after a forced stop get only a moment:
            // their connections are closed and nobody waits for them.
            pool?.stop(timeout: forcedStop ? 0.2 : 2)
            pool = nil
            asyncExecutor = nil
            closeResources()
            state = .stopped
        }
        try eventLoop()
    }

    /// Asks the server to shut down gracefully. Safe from any thread.
    public func shutdown() {
        shared.withLock { $0.shutdownRequested = true }
        wake()
    }

    func wake() {
        // Under the lock: `closeResources()` may be closing the fd on the loop thread.
        shared.withLock { state in
            guard state.wakeFD >= 0 else { return }
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { write(state.wakeFD, $0.baseAddress, 8) }
        }
    }

    func register(_ fd: Int32, key: UInt64, events: UInt32) throws {
        var event = epoll_event()
        event.events = events
        event.data = epoll_data_t(u64: key)
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw HTTPServerError(.eventLoop, "epoll_ctl(ADD) failed.", errno: errno)
        }
    }

    private func closeResources() {
        for connection in connections.values { close(connection.fd) }
        connections.removeAll()
        shared.withLock { state in
            if state.wakeFD >= 0 { close(state.wakeFD) }
            state.wakeFD = -1
        }
        for fd in [listenFD, epollFD] where fd >= 0 { close(fd) }
        listenFD = -1
        wakeFD = -1
        epollFD = -1
    }

    /// The configuration's logger (``HTTPServerConfiguration/logger``).
    var logger: Logger { configuration.logger }

    // MARK: Binding

    private func bind() throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(configuration.host, String(configuration.port), &hints, &list)
        guard rc == 0, let first = list else {
            throw HTTPServerError(
                .addressResolution,
                "Cannot resolve the bind address \(configuration.host): \(String(cString: gai_strerror(rc))). Use an IP address such as 127.0.0.1."
            )
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(
                info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastErrno = errno; continue }
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 || listen(fd, configuration.backlog) != 0 {
                lastErrno = errno
                close(fd)
                continue
            }
            listenFD = fd
            try readBoundAddress()
            return
        }
        throw HTTPServerError(
            .bind,
            "Cannot listen on \(configuration.host):\(configuration.port): \(String(cString: strerror(lastErrno))). Choose another port or stop the process using it.",
            errno: lastErrno)
    }

    private func readBoundAddress() throws {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int32 in
                guard getsockname(listenFD, address, &length) == 0 else { return -1 }
                return getnameinfo(
                    address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                    NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard rc == 0 else { throw HTTPServerError(.bind, "Cannot read the bound address.", errno: errno) }
        func text(_ chars: [CChar]) -> String {
            String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        boundAddress = text(host)
        port = Int(text(service)) ?? 0
    }
}
