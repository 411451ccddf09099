#if canImport(Glibc)
import Glibc
#endif
import CLinux
import IngestSupport

/// A connection the server handed over after `101 Switching Protocols`: the
/// socket (in blocking mode), the upgrade request, and the bytes the client
/// sent after that request which the server had already read. The
/// ``HTTPUpgradedSession`` that receives it owns it until it returns; the
/// server then closes it.
///
/// ```swift
/// .accept(headers: ["Upgrade": "echo"]) { connection in
///     connection.onShutdown = { connection.closeGracefully() }   // the server is stopping
///     while let bytes = try? connection.read(timeout: 60), !bytes.isEmpty {
///         try? connection.write(bytes)
///     }
/// }
/// ```
///
/// On a graceful shutdown the server calls ``onShutdown`` (if set) and
/// waits for the session to return within its grace period; when the period
/// ends it shuts the socket down, so a blocked ``read(maxBytes:timeout:)``
/// returns end of input and a ``write(_:)`` fails.
// @unchecked Sendable: `state` is a locked box; the other stored properties
// are immutable.
public final class HTTPUpgradedConnection: @unchecked Sendable {
    /// The request that asked for the upgrade (its headers, path and
    /// ``HTTPRequest/pathParameters``).
    public let request: HTTPRequest
    /// The socket's file descriptor, in blocking mode. Prefer ``read(maxBytes:timeout:)``,
    /// ``write(_:)`` and ``close()``, which know about shutdown; never close
    /// the descriptor directly.
    public let fileDescriptor: Int32

    private struct State {
        /// Bytes received with the request head, returned by the first reads.
        var initialBytes: [UInt8]
        var closed = false
        var shuttingDown = false
        var onShutdown: (@Sendable () -> Void)?
    }
    private let state: LockedBox<State>

    init(request: HTTPRequest, fileDescriptor: Int32, initialBytes: [UInt8]) {
        self.request = request
        self.fileDescriptor = fileDescriptor
        self.state = LockedBox(State(initialBytes: initialBytes))
    }

    deinit {
        close()
    }

    /// Whether the server has begun a graceful shutdown.
    public var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    /// Called once, on the server's event loop thread, when the server begins
    /// a graceful shutdown (at once if it already has): say goodbye in the
    /// protocol (a WebSocket close frame) and return. It must not block.
    public var onShutdown: (@Sendable () -> Void)? {
        get { state.withLock { $0.onShutdown } }
        set {
            let callNow = state.withLock { state -> Bool in
                state.onShutdown = newValue
                return state.shuttingDown
            }
            if callNow { newValue?() }
        }
    }

    /// Reads what is available, waiting for at least one byte: first the
    /// bytes that arrived with the upgrade request, then from the socket.
    /// Returns an empty array at end of input (the client closed its side, or
    /// the server's grace period ended).
    ///
    /// - Parameters:
    ///   - maxBytes: at most this many bytes are returned.
    ///   - timeout: seconds to wait for a byte; nil waits without limit.
    /// - Throws: ``HTTPServerError`` `.timedOut`, `.connectionClosed` (after
    ///   ``close()``) or `.connectionIO` with the `errno`.
    public func read(maxBytes: Int = 64 * 1024, timeout: Double? = nil) throws(HTTPServerError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(1, maxBytes))
        var failure: HTTPServerError?
        let count: Int = bytes.withUnsafeMutableBytes { buffer -> Int in
            do throws(HTTPServerError) { return try read(into: buffer, timeout: timeout) } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// ``read(maxBytes:timeout:)`` into the caller's memory, which a session
    /// reuses for every read (a fresh array per read is an allocation and
    /// zero-filling of its whole size). Returns the number of bytes read,
    /// 0 at end of input.
    public func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Double? = nil) throws(HTTPServerError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let buffered = try state.withLock { state throws(HTTPServerError) -> Int in
            guard !state.closed else { throw HTTPServerError(.connectionClosed, "the connection is closed") }
            guard !state.initialBytes.isEmpty else { return 0 }
            let count = min(buffer.count, state.initialBytes.count)
            state.initialBytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: count) }
            state.initialBytes.removeFirst(count)
            return count
        }
        if buffered > 0 { return buffered }
        if let timeout {
            var pfd = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
            let deadline = monotonicNanos() + nanos(timeout)
            while true {
                let now = monotonicNanos()
                guard now < deadline else { throw HTTPServerError(.timedOut, "no data within \(timeout) s") }
                let rc = poll(&pfd, 1, Int32(min(Int64(Int32.max), Int64((deadline - now) / 1_000_000) + 1)))
                if rc > 0 { break }
                if rc < 0 && errno != EINTR { throw HTTPServerError(.connectionIO, "poll failed", errno: errno) }
            }
        }
        while true {
            let n = recv(fileDescriptor, base, buffer.count, 0)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            if errno == ECONNRESET || errno == ENOTCONN || errno == EPIPE { return 0 }
            throw HTTPServerError(.connectionIO, "recv failed", errno: errno)
        }
    }

    /// Writes all of `bytes`, blocking until the kernel has taken them.
    ///
    /// - Throws: ``HTTPServerError`` `.connectionClosed` (after ``close()``) or
    ///   `.connectionIO` (the peer is gone: `EPIPE`, `ECONNRESET`).
    public func write(_ bytes: [UInt8]) throws(HTTPServerError) {
        guard !state.withLock({ $0.closed }) else { throw HTTPServerError(.connectionClosed, "the connection is closed") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                send(fileDescriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw HTTPServerError(.connectionIO, "send failed", errno: errno)
            }
        }
    }

    /// Ends the sending side (the peer reads end of input) and keeps reading
    /// possible, for a protocol's closing handshake.
    public func closeGracefully() {
        state.withLock { state in
            guard !state.closed else { return }
            _ = Glibc.shutdown(fileDescriptor, Int32(SHUT_WR))
        }
    }

    /// Closes the socket. Idempotent; the server calls it when the session returns.
    public func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            Glibc.close(fileDescriptor)
        }
    }

    // MARK: Called by the server

    /// The server begins a graceful shutdown: runs ``onShutdown`` once.
    func serverWillShutDown() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.shuttingDown else { return nil }
            state.shuttingDown = true
            return state.onShutdown
        }
        handler?()
    }

    /// The grace period ended: blocked reads return end of input, writes fail.
    func forceShutdown() {
        state.withLock { state in
            state.shuttingDown = true
            guard !state.closed else { return }
            _ = Glibc.shutdown(fileDescriptor, Int32(SHUT_RDWR))
        }
    }
}
