/// A sink failure, with the database's own code and the retry advice the
/// upload handler turns into an HTTP status.
///
/// ```swift
/// do { try sink.migrate(to: schema) }
/// catch { print(error.code, error.isTransient, error.message) }
/// ```
public struct SinkError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The database could not be opened or configured.
        public static let open = Code(rawValue: "open")
        /// The database is busy or locked by another process; retry later (503).
        public static let busy = Code(rawValue: "busy")
        /// The disk or database is full; retry after freeing space (503).
        public static let full = Code(rawValue: "full")
        /// A statement failed (500).
        public static let statement = Code(rawValue: "statement")
        /// A schema change cannot be applied (500).
        public static let migration = Code(rawValue: "migration")
        /// The database cannot be reached (connection refused or lost, the
        /// server restarting); retry later (503). Used by the PostgreSQL and
        /// ClickHouse sinks.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The sink was closed.
        public static let closed = Code(rawValue: "closed")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The database's result code (SQLite extended result code), if any.
    public var databaseCode: Int32?
    /// The database, e.g. the SQLite file path.
    public var location: String

    /// Creates an error.
    public init(_ code: Code, _ message: String, databaseCode: Int32? = nil, location: String) {
        self.code = code
        self.message = message
        self.databaseCode = databaseCode
        self.location = location
    }

    /// Whether retrying later may succeed (busy, full, unavailable): the upload answers 503 with `Retry-After`.
    public var isTransient: Bool { code == .busy || code == .full || code == .unavailable }

    public var description: String {
        "SinkError(\(code.rawValue)\(databaseCode.map { ", code \($0)" } ?? "")) at \(location): \(message)"
    }
}
