#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One HTTP/1.1 client connection over TCP: a non-blocking socket driven by
/// `poll(2)` with a timeout per wait, so a blocked read or write ends after
/// the caller's timeout, and ``cancel()`` (from another thread) wakes it at
/// once. Shared by the sync transport (`HTTPClientTransport` in DataIngest)
/// and the server's ClickHouse client; each keeps its own policy (retries,
/// error types and hints) on top.
///
/// One request at a time uses a connection (no pipelining): a
/// ``HTTPClientPool`` hands it out, the caller runs one
/// ``exchange(_:isHead:timeout:maxBodyBytes:)`` and gives it back only when
/// the answer was read completely and the server keeps the connection open.
///
/// ```swift
/// let connection = try HTTPClientConnection.connect(host: "127.0.0.1", port: 9090, name: "127.0.0.1:9090", timeout: 10)
/// defer { connection.close() }
/// let head = try HTTPClientConnection.requestHead(method: "GET", target: "/health", host: "127.0.0.1:9090")
/// let answer = try connection.exchange(head, timeout: 30)
/// print(answer.status, answer.body.count)
/// ```
// @unchecked Sendable: `fd` is immutable; `closed` is guarded by `lock`
// (close and cancel may race); the buffers are used by one request at a time,
// which the pool guarantees.
package final class HTTPClientConnection: @unchecked Sendable {
    let fd: Int32
    /// How messages name the peer (`127.0.0.1:9090`, `ClickHouse at
    /// http://127.0.0.1:8123`); also the key of its ``HTTPClientPool``.
    package let name: String
    /// Monotonic seconds of the last completed exchange (for the pool's idle limit).
    package internal(set) var lastUsed: Double = 0
    /// Bytes read from the socket and not yet consumed by the response parser.
    var input: [UInt8] = []
    /// Where the unconsumed bytes of `input` start.
    var position = 0
    /// Response bytes received during the current exchange: zero means the
    /// server sent nothing, which decides whether a retry is safe.
    package internal(set) var receivedInExchange = 0
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    private let lock = Lock()
    private var closed = false

    private init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    deinit { close() }

    /// Flags for `send`: no SIGPIPE when the peer has gone (Linux); Darwin
    /// gets `SO_NOSIGPIPE` on the socket instead.
    #if os(Linux)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let sendFlags: Int32 = 0
    #endif

    // MARK: Connecting

    /// Resolves `host` (a name or an IPv4/IPv6 literal without brackets) and
    /// connects to the first address that answers within `timeout` seconds
    /// in total. `name` names the peer in messages and pools. `register`
    /// receives each socket before it connects, so a cancelled task can
    /// shut it down.
    ///
    /// - Throws: ``HTTPClientError`` `.hostNotFound`, `.connectionRefused`,
    ///   `.timedOut`, `.cancelled` or `.io`, with the `errno`.
    package static func connect(
        host: String, port: Int, name: String, timeout: Double,
        register: (HTTPClientConnection) -> Void = { _ in }
    ) throws(HTTPClientError) -> HTTPClientConnection {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if os(Linux)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        var rc: Int32 = 0
        for _ in 0..<3 {  // EAI_SYSTEM with EINTR: a signal interrupted the lookup
            rc = getaddrinfo(host, String(port), &hints, &list)
            if !(rc == EAI_SYSTEM && errno == EINTR) { break }
        }
        guard rc == 0, let first = list else {
            let reason = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            throw HTTPClientError(.hostNotFound, "cannot resolve \(host): \(reason)")
        }
        defer { freeaddrinfo(list) }
        let deadline = monotonicSeconds() + timeout
        var lastError = HTTPClientError(.connectionRefused, "cannot connect to \(name)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            #if os(Linux)
            let type = Int32(SOCK_STREAM.rawValue)
            #else
            let type = SOCK_STREAM
            #endif
            let fd = socket(info.pointee.ai_family, type, 0)
            if fd < 0 {
                lastError = HTTPClientError(.io, "socket() for \(name) failed: \(String(cString: strerror(errno)))", errno: errno)
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if !os(Linux)
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let connection = HTTPClientConnection(fd: fd, name: name)
            register(connection)
            do {
                try connection.finishConnect(info.pointee.ai_addr, info.pointee.ai_addrlen, deadline: deadline)
                return connection
            } catch {
                connection.close()
                lastError = error
                if error.code == .timedOut || error.code == .cancelled { throw error }
            }
        }
        throw lastError
    }

    private func finishConnect(
        _ address: UnsafeMutablePointer<sockaddr>, _ length: socklen_t,
        deadline: Double
    ) throws(HTTPClientError) {
        #if os(Linux)
        let rc = Glibc.connect(fd, address, length)
        #else
        let rc = Darwin.connect(fd, address, length)
        #endif
        if rc == 0 { return }
        // EINTR: the connection attempt goes on asynchronously, as with EINPROGRESS.
        guard errno == EINPROGRESS || errno == EINTR else { throw connectError(errno) }
        try wait(for: Int16(POLLOUT), until: deadline, doing: "connecting to")
        var error: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 else { throw connectError(errno) }
        if error != 0 { throw connectError(error) }
    }

    private func connectError(_ code: Int32) -> HTTPClientError {
        let kind: HTTPClientError.Code
        switch code {
        case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL: kind = .connectionRefused
        case ETIMEDOUT: kind = .timedOut
        default: kind = isCancelled ? .cancelled : .io
        }
        return HTTPClientError(
            kind, "cannot connect to \(name): \(String(cString: strerror(code))); check that the server runs there", errno: code)
    }

    // MARK: Waiting, closing, cancelling

    /// Waits until the socket is ready for `events` or `deadline` passes.
    private func wait(for events: Int16, until deadline: Double, doing action: String) throws(HTTPClientError) {
        while true {
            if isCancelled { throw HTTPClientError(.cancelled, "\(action) \(name): the task was cancelled") }
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 { throw HTTPClientError(.timedOut, "\(action) \(name) timed out") }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&descriptor, 1, Int32(min(remaining * 1000 + 1, Double(Int32.max))))
            if rc < 0 {
                if errno == EINTR { continue }
                throw HTTPClientError(.io, "poll() on the connection to \(name) failed: \(String(cString: strerror(errno)))", errno: errno)
            }
            if rc > 0 {
                if isCancelled { throw HTTPClientError(.cancelled, "\(action) \(name): the task was cancelled") }
                return  // ready, or an error/hang-up the next call reports
            }
        }
    }

    private var cancelled = false
    private var isCancelled: Bool { lock.withLock { cancelled } }

    /// Closes the socket (idempotent; `deinit` closes it too).
    package func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            #if os(Linux)
            _ = Glibc.close(fd)
            #else
            _ = Darwin.close(fd)
            #endif
        }
    }

    /// Wakes a request blocked on this connection (from another thread): it
    /// fails with ``HTTPClientError/Code/cancelled``. The fd is shut down, not
    /// closed, so it cannot be reused by another socket meanwhile.
    package func cancel() {
        lock.withLock {
            cancelled = true
            if !closed { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Whether an idle pooled connection can still carry a request: the
    /// server has not closed it (EOF) and sent nothing unexpected.
    package func isReusable() -> Bool {
        guard position == input.count else { return false }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var rc: Int32
        repeat { rc = poll(&descriptor, 1, 0) } while rc < 0 && errno == EINTR
        return rc == 0  // readable means EOF, a reset or stray bytes
    }

    // MARK: Writing and reading

    /// Writes all of `bytes`, waiting at most `timeout` seconds each time the
    /// socket's send buffer is full.
    func write(_ bytes: UnsafeRawBufferPointer, timeout: Double) throws(HTTPClientError) {
        var sent = 0
        while sent < bytes.count {
            let n = send(fd, bytes.baseAddress! + sent, bytes.count - sent, Self.sendFlags)
            if n > 0 {
                sent += n
                continue
            }
            let code = errno
            if n < 0 && code == EINTR { continue }
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                try wait(for: Int16(POLLOUT), until: monotonicSeconds() + timeout, doing: "sending to")
                continue
            }
            if isCancelled { throw HTTPClientError(.cancelled, "sending to \(name): the task was cancelled") }
            let kind: HTTPClientError.Code = code == EPIPE || code == ECONNRESET ? .connectionClosed : .io
            throw HTTPClientError(kind, "sending to \(name) failed: \(String(cString: strerror(code)))", errno: code)
        }
    }

    /// Reads what is available into `input`, waiting at most `timeout`
    /// seconds for the first byte. Returns false at end of stream.
    func fill(timeout: Double) throws(HTTPClientError) -> Bool {
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                input.append(contentsOf: scratch[0..<n])
                receivedInExchange += n
                return true
            }
            if n == 0 {
                if isCancelled { throw HTTPClientError(.cancelled, "reading from \(name): the task was cancelled") }
                return false
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                try wait(for: Int16(POLLIN), until: monotonicSeconds() + timeout, doing: "waiting for the answer of")
                continue
            }
            if isCancelled { throw HTTPClientError(.cancelled, "reading from \(name): the task was cancelled") }
            let kind: HTTPClientError.Code = code == ECONNRESET || code == EPIPE ? .connectionClosed : .io
            throw HTTPClientError(kind, "reading from \(name) failed: \(String(cString: strerror(code)))", errno: code)
        }
    }
}

/// Monotonic seconds (for deadlines; never jumps with the wall clock).
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
