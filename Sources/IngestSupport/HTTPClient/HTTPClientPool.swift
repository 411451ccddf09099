/// Idle keep-alive ``HTTPClientConnection``s, by ``HTTPClientConnection/name``
/// (one list per peer). A connection idle longer than ``idleTimeout``, or one
/// the server has closed meanwhile, is closed instead of handed out.
///
/// ```swift
/// let pool = HTTPClientPool(maxIdlePerName: 4, idleTimeout: 20)
/// let connection = try pool.takeIdle("127.0.0.1:9090")
///     ?? HTTPClientConnection.connect(host: "127.0.0.1", port: 9090, name: "127.0.0.1:9090", timeout: 10)
/// let head = try HTTPClientConnection.requestHead(method: "GET", target: "/health", host: "127.0.0.1:9090")
/// let answer = try connection.exchange(head, timeout: 30)
/// if answer.keepAlive { pool.giveBack(connection) } else { connection.close() }
/// ```
// @unchecked Sendable: `idle` is only touched under its lock; the settings are immutable.
package final class HTTPClientPool: @unchecked Sendable {
    /// Idle connections kept per name; more are closed when given back.
    package let maxIdlePerName: Int
    /// Seconds an idle connection stays usable.
    package let idleTimeout: Double
    private let idle = LockedBox<[String: [HTTPClientConnection]]>([:])

    /// Creates an empty pool.
    package init(maxIdlePerName: Int, idleTimeout: Double) {
        self.maxIdlePerName = maxIdlePerName
        self.idleTimeout = idleTimeout
    }

    deinit { closeAll() }

    /// The most recently used idle connection to `name` that is still open, if any.
    package func takeIdle(_ name: String) -> HTTPClientConnection? {
        let now = monotonicSeconds()
        var stale: [HTTPClientConnection] = []
        defer { for connection in stale { connection.close() } }
        return idle.withLock { idle -> HTTPClientConnection? in
            while let connection = idle[name]?.popLast() {
                if now - connection.lastUsed < idleTimeout && connection.isReusable() {
                    return connection
                }
                stale.append(connection)
            }
            return nil
        }
    }

    /// Keeps `connection` for the next request, or closes it when the pool
    /// holds ``maxIdlePerName`` connections to its peer already. Give back
    /// only a connection whose last answer said ``HTTPClientResponse/keepAlive``.
    package func giveBack(_ connection: HTTPClientConnection) {
        connection.lastUsed = monotonicSeconds()
        let kept = idle.withLock { idle -> Bool in
            guard idle[connection.name, default: []].count < max(0, maxIdlePerName) else { return false }
            idle[connection.name, default: []].append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    /// Closes every idle connection.
    package func closeAll() {
        let connections = idle.withLock { idle -> [HTTPClientConnection] in
            defer { idle.removeAll() }
            return idle.values.flatMap { $0 }
        }
        for connection in connections { connection.close() }
    }

    /// Idle connections in the pool, over all peers (for tests and diagnostics).
    package var idleCount: Int { idle.withLock { $0.values.reduce(0) { $0 + $1.count } } }
}
