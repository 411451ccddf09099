import Dispatch
import Foundation
import IngestCore
import IngestSupport

/// The default transport for `http://` base URLs: a plain HTTP/1.1 client on
/// POSIX sockets with keep-alive connections, one request in flight per
/// connection. It exists because `URLSession` (libcurl under
/// FoundationNetworking on Linux) took a large share of the CPU of the end
/// to end upload path (Docs/SyncSession.md, "Transport"); this client
/// writes a request with one `send` loop and reads the answer straight from
/// the socket.
///
/// It speaks plain `http` only: the loopback/development server, or a server
/// behind a TLS-terminating proxy on the same host. `https://` base URLs use
/// ``URLSessionTransport`` (see ``App/Configuration/transportKind``).
///
/// ```swift
/// var configuration = App.Configuration(baseURL: URL(string: "http://127.0.0.1:9090")!)
/// configuration.transport = HTTPClientTransport(configuration: .init(maxIdleConnectionsPerHost: 8))
/// ```
///
/// Behaviour:
/// - Answers with `Content-Length`, chunked, or delimited by the end of the
///   connection; `Connection: close` and HTTP/1.0 answers close the
///   connection after the answer. Interim `1xx` answers are skipped.
/// - A pooled connection idle longer than
///   ``Configuration/idleConnectionTimeout``, or one the server has closed
///   meanwhile, is not used. If a reused connection still turns out closed
///   (the server closed it while the request was on its way) and the server
///   sent no byte of an answer, the request is sent once more on a fresh
///   connection. The server closes keep-alive connections only between
///   requests, and an upload is idempotent on the server (keyed by store id
///   and segment number, answered from its receipt when repeated), so this
///   retry never stores anything twice. Every other failure is thrown and
///   the session retries it with backoff.
/// - Timeouts: connecting waits at most ``Configuration/connectTimeout``
///   (and never longer than the request's timeout); each wait to send or to
///   receive waits at most the request's `timeout`
///   (``App/Configuration/requestTimeout`` for auth requests,
///   ``SyncSession/Configuration/uploadTimeout`` for uploads), as
///   `URLRequest.timeoutInterval` does.
/// - Interrupted system calls (`EINTR`) are restarted; writes to a closed
///   connection raise no `SIGPIPE` (`MSG_NOSIGNAL`).
/// - Host names, IPv4 and IPv6 literals (`http://[::1]:9090`) are resolved
///   with `getaddrinfo`; each address is tried in turn.
/// - Cancelling the calling task shuts the socket down and throws
///   ``TransportError/Code/cancelled``.
///
/// Failures are ``TransportError``s with a ``TransportError/Code``
/// (`connectionRefused`, `timedOut`, `connectionClosed`, …) and the `errno`.
public final class HTTPClientTransport: SyncTransport {
    /// The transport's settings; every property has a documented default.
    public struct Configuration: Sendable {
        /// Idle keep-alive connections kept per host:port. More requests than
        /// this may run at once (each on its own connection); the extra
        /// connections are closed after their answer. Default 4.
        public var maxIdleConnectionsPerHost: Int = 4
        /// Seconds to wait for a TCP connection to be established. Default 10.
        public var connectTimeout: TimeInterval = 10
        /// Seconds an idle connection stays in the pool; older ones are
        /// closed instead of reused. Keep it below the server's keep-alive
        /// timeout (30 s for `ingest-server`). Default 20.
        public var idleConnectionTimeout: TimeInterval = 20
        /// Largest answer body accepted, in bytes. Default 64 MiB.
        public var maxResponseBodyBytes: Int = 64 * 1024 * 1024

        /// Creates a configuration with the defaults above, or the given values.
        public init(
            maxIdleConnectionsPerHost: Int = 4, connectTimeout: TimeInterval = 10,
            idleConnectionTimeout: TimeInterval = 20
        ) {
            self.maxIdleConnectionsPerHost = maxIdleConnectionsPerHost
            self.connectTimeout = connectTimeout
            self.idleConnectionTimeout = idleConnectionTimeout
        }
    }

    /// The settings it was created with.
    public let configuration: Configuration
    private let pool: HTTPClientPool

    /// Creates a transport.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        pool = HTTPClientPool(
            maxIdlePerName: configuration.maxIdleConnectionsPerHost,
            idleTimeout: configuration.idleConnectionTimeout)
    }

    /// Sends `request` and returns the server's answer, whatever its status.
    /// Throws a ``TransportError`` when no complete answer arrived.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let target = try HTTPClientTarget(request.url)
        let exchange = HTTPClientExchange()
        // Blocking socket calls run on a serial queue of their own, never on
        // Swift's concurrency pool: serial queues target libdispatch's
        // overcommitting root queue, which adds a thread when the others
        // block, so requests blocked in poll() never hold each other back
        // (a concurrent queue would be limited to one thread per core).
        let queue = DispatchQueue(label: "dataingest.http-client.request")
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransportResponse, any Error>) in
                queue.async {
                    do {
                        continuation.resume(returning: try self.perform(request, target: target, exchange: exchange))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            exchange.cancel()
        }
    }

    /// Sends on a pooled connection if one is alive, else on a new one; a
    /// reused connection that turns out closed before any answer byte gets
    /// one retry on a fresh connection (see the type's documentation).
    private func perform(
        _ request: TransportRequest, target: HTTPClientTarget,
        exchange: HTTPClientExchange
    ) throws(TransportError) -> TransportResponse {
        if let connection = pool.takeIdle(target.key) {
            guard exchange.attach(connection) else { throw cancelledError(request) }
            do {
                return try finish(request, target: target, on: connection)
            } catch {
                connection.close()
                let unanswered = connection.receivedInExchange == 0 && error.code == .connectionClosed
                guard unanswered else { throw error }
                // The server closed this idle connection as the request went out: try once more.
            }
        }
        let connection: HTTPClientConnection
        do {
            connection = try HTTPClientConnection.connect(
                host: target.host, port: target.port, name: target.key,
                timeout: min(configuration.connectTimeout, request.timeout),
                register: { _ = exchange.attach($0) })
        } catch {
            throw TransportError(error)
        }
        do {
            return try finish(request, target: target, on: connection)
        } catch {
            connection.close()
            throw error
        }
    }

    private func finish(
        _ request: TransportRequest, target: HTTPClientTarget,
        on connection: HTTPClientConnection
    ) throws(TransportError) -> TransportResponse {
        let answer: HTTPClientResponse
        do {
            var message = try HTTPClientConnection.requestHead(
                method: request.method, target: target.requestTarget, host: target.hostHeader,
                headers: request.headers, bodyCount: request.body?.count)
            if let body = request.body { message.append(contentsOf: body) }
            answer = try connection.exchange(
                message, isHead: request.method.uppercased() == "HEAD",
                timeout: request.timeout, maxBodyBytes: configuration.maxResponseBodyBytes)
        } catch {
            var error = TransportError(error)
            error.message = "\(request.method) \(target.requestTarget): \(error.message)"
            throw error
        }
        if answer.keepAlive { pool.giveBack(connection) } else { connection.close() }
        return TransportResponse(status: answer.status, headers: answer.headers, body: Data(answer.body))
    }

    private func cancelledError(_ request: TransportRequest) -> TransportError {
        TransportError(.cancelled, "\(request.method) \(request.url.path): the task was cancelled")
    }

    // MARK: The pool

    /// Idle connections in the pool, over all hosts (for tests and diagnostics).
    var idleConnectionCount: Int { pool.idleCount }
}

extension TransportError {
    /// The socket client's failure as the sync API reports it: the same
    /// code, message and `errno`, with the setting to check for a host name
    /// that does not resolve.
    init(_ error: HTTPClientError) {
        switch error.code {
        case .hostNotFound:
            self.init(.hostNotFound, error.message + "; check App.Configuration.baseURL", errno: error.errno)
        case .invalidRequest:
            self.init(.invalidResponse, error.message, errno: error.errno)
        default:
            self.init(Code(error.code.rawValue), error.message, errno: error.errno)
        }
    }
}

/// The connection a request currently uses, so that cancelling the task can
/// wake the thread blocked on it.
// @unchecked Sendable: both properties are guarded by `state`'s lock.
final class HTTPClientExchange: @unchecked Sendable {
    private let state = LockedBox<(cancelled: Bool, connection: HTTPClientConnection?)>((false, nil))

    /// Records the connection in use; false (and the connection cancelled) if
    /// the task was cancelled already.
    func attach(_ connection: HTTPClientConnection) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            state.connection = connection
            return state.cancelled
        }
        if cancelled { connection.cancel() }
        return !cancelled
    }

    func cancel() {
        let connection = state.withLock { state -> HTTPClientConnection? in
            state.cancelled = true
            return state.connection
        }
        connection?.cancel()
    }
}
