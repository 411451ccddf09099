import Dispatch
import IngestCore
import IngestSupport

/// A bounded pool of ``PostgresConnection``s to one database.
///
/// ```swift
/// let pool = PostgresPool(connection: "postgresql://ingest@127.0.0.1/weather", maxConnections: 8)
/// let count = try pool.withConnection { try $0.queryText("SELECT count(*) FROM t") }
/// ```
///
/// Connections are opened lazily and reused. A connection that libpq reports
/// broken after a call (the server restarted) is closed instead of being
/// returned, so the next caller connects afresh: after a database restart
/// the first calls fail with a transient error and later ones succeed.
// @unchecked Sendable: `idle` and `closed` are only touched while holding
// `lock`; the semaphore bounds how many connections exist at once.
package final class PostgresPool: @unchecked Sendable {
    /// The libpq connection string or URI.
    package let connection: String
    /// The most connections open at once.
    package let maxConnections: Int
    /// Seconds a caller waits for a free connection before `.poolTimeout`.
    package let acquireTimeout: Double

    private let lock = Lock()
    private var idle: [PostgresConnection] = []
    private var closed = false
    private let slots: DispatchSemaphore

    /// Creates a pool; nothing is connected until the first call.
    package init(connection: String, maxConnections: Int = 8, acquireTimeout: Double = 30) {
        self.connection = connection
        self.maxConnections = max(1, maxConnections)
        self.acquireTimeout = acquireTimeout
        slots = DispatchSemaphore(value: max(1, maxConnections))
    }

    /// The connection string without its password.
    package var displayName: String { PostgresConnection.redacted(connection) }

    /// Runs `body` with a connection of its own. `fresh` is true when the
    /// connection was just opened (not reused from the pool).
    package func withConnection<T>(_ body: (PostgresConnection, _ fresh: Bool) throws(PostgresError) -> T) throws(PostgresError) -> T {
        guard slots.wait(timeout: .now() + acquireTimeout) == .success else {
            throw PostgresError(
                .poolTimeout,
                "no PostgreSQL connection to \(displayName) became free within "
                    + "\(Int(acquireTimeout)) s (\(maxConnections) in use); retry later")
        }
        defer { slots.signal() }
        let reused: PostgresConnection? = try lock.withLock { () throws(PostgresError) -> PostgresConnection? in
            if closed { throw PostgresError(.usage, "the PostgreSQL pool for \(displayName) is closed") }
            return idle.popLast()
        }
        let connection: PostgresConnection
        if let reused { connection = reused } else { connection = try PostgresConnection(self.connection) }
        do throws(PostgresError) {
            let result = try body(connection, reused == nil)
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    /// ``withConnection(_:)`` for callers that do not care whether the connection is fresh.
    package func withConnection<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        try withConnection { (connection: PostgresConnection, _: Bool) throws(PostgresError) -> T in try body(connection) }
    }

    private func release(_ connection: PostgresConnection) {
        // A connection left mid-transaction would leak its locks to the next user.
        if connection.isHealthy && connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
        let keep = connection.isHealthy && !connection.inTransaction
        let drop: PostgresConnection? = lock.withLock {
            guard keep && !closed else { return connection }
            idle.append(connection)
            return nil
        }
        drop?.close()
    }

    /// Closes the idle connections (after a lost connection: the database
    /// restarted, so they are most likely dead too).
    package func discardIdle() {
        let connections = lock.withLock { () -> [PostgresConnection] in
            defer { idle.removeAll() }
            return idle
        }
        for connection in connections { connection.close() }
    }

    /// Closes the idle connections; later calls throw `.usage`.
    package func close() {
        let connections = lock.withLock { () -> [PostgresConnection] in
            closed = true
            defer { idle.removeAll() }
            return idle
        }
        for connection in connections { connection.close() }
    }
}
