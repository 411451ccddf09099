/// A PostgreSQL failure: the server's SQLSTATE and message, or a connection
/// problem, with whether retrying later may succeed.
///
/// ```swift
/// do { try connection.execute("SELECT 1") }
/// catch { print(error.sqlState ?? "-", error.isTransient, error.message) }
/// ```
package struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The connection could not be opened, or it was lost (the server
        /// restarted, the network failed). Retry with a new connection.
        package static let connection = Code(rawValue: "connection")
        /// The server refused a statement; ``PostgresError/sqlState`` says why.
        package static let statement = Code(rawValue: "statement")
        /// No pooled connection became free in time.
        package static let poolTimeout = Code(rawValue: "poolTimeout")
        /// The caller used the API wrongly (a bug or a value PostgreSQL cannot hold).
        package static let usage = Code(rawValue: "usage")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do.
    package var message: String
    /// The five-character SQLSTATE the server reported, if any (e.g. `23505`).
    package var sqlState: String?

    /// Creates an error.
    package init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    /// Whether retrying later (on a fresh connection) may succeed: lost or
    /// refused connections, a server shutting down or starting up, too many
    /// connections, out of resources, serialization failures and deadlocks.
    package var isTransient: Bool {
        if code == .connection || code == .poolTimeout { return true }
        guard let sqlState else { return false }
        // 08: connection exception; 53: insufficient resources; 57P0x:
        // admin/crash shutdown, cannot connect now; 40001/40P01: retryable
        // transaction failures.
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || sqlState.hasPrefix("57P")
            || sqlState == "40001" || sqlState == "40P01"
    }

    package var description: String {
        "PostgresError(\(code.rawValue)\(sqlState.map { ", SQLSTATE \($0)" } ?? "")): \(message)"
    }
}
