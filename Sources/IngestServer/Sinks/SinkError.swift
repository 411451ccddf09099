/// A sink failure, with the database's own code and the retry advice the
/// upload handler turns into an HTTP status.
///
/// ```swift
/// do { try sink.migrate(to: schema) }
/// catch { print(error.code, error.isTransient, error.message) }
/// ```
package struct SinkError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The database could not be opened or configured.
        package static let open = Code(rawValue: "open")
        /// The database is busy or locked by another process; retry later (503).
        package static let busy = Code(rawValue: "busy")
        /// The disk or database is full; retry after freeing space (503).
        package static let full = Code(rawValue: "full")
        /// A statement failed (500).
        package static let statement = Code(rawValue: "statement")
        /// A schema change cannot be applied (500).
        package static let migration = Code(rawValue: "migration")
        /// The database cannot be reached (connection refused or lost, the
        /// server restarting); retry later (503). Used by the PostgreSQL and
        /// ClickHouse sinks.
        package static let unavailable = Code(rawValue: "unavailable")
        /// The sink was closed.
        package static let closed = Code(rawValue: "closed")
        /// The disk failed to sync committed data (fsync); the SQLite sink
        /// answers every upload with this until the server restarts (500).
        package static let sync = Code(rawValue: "sync")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do.
    package var message: String
    /// The database's result code (SQLite extended result code), if any.
    package var databaseCode: Int32?
    /// The database, e.g. the SQLite file path.
    package var location: String

    /// Creates an error.
    package init(_ code: Code, _ message: String, databaseCode: Int32? = nil, location: String) {
        self.code = code
        self.message = message
        self.databaseCode = databaseCode
        self.location = location
    }

    /// Whether retrying later may succeed (busy, full, unavailable): the upload answers 503 with `Retry-After`.
    package var isTransient: Bool { code == .busy || code == .full || code == .unavailable }

    package var description: String {
        "SinkError(\(code.rawValue)\(databaseCode.map { ", code \($0)" } ?? "")) at \(location): \(message)"
    }
}
