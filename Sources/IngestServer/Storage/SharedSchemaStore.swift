import Foundation
import IngestCore
import IngestSupport

/// Development mode's learned schemas in the shared PostgreSQL state
/// (`sharedState`), one row per app in `development_schemas`, so that every
/// ingest server serving the app validates against the same schema and a
/// restart keeps what was learned (Docs/Deployment.md §4).
///
/// The rule when several servers learn at once: learning takes the app's
/// row lock (`SELECT … FOR UPDATE`), so it is serialized across servers.
/// The first to take it adds what its upload needs and stores the grown
/// schema before it lets go; the next one starts from the stored schema. A
/// collection or field is therefore defined by the first upload that needs
/// it, whichever server received it, and a value of another type in a later
/// upload is rejected (`wrongType`), as on one server.
///
/// ```swift
/// let store = SharedSchemaStore(connection: "postgresql://ingest@db/ingest_state")
/// let schema = try store.learn(appId: "lab") { stored in
///     let grown = …                   // stored (or the configured schema) plus what the upload needs
///     return (store: grown, result: grown)
/// }
/// ```
///
/// One connection of its own (not the state store's, which serves logins),
/// opened on first use and reopened after a failure; calls are serialized.
// @unchecked Sendable: `connection` is only touched while holding `lock`.
package final class SharedSchemaStore: @unchecked Sendable {
    private let connectionString: String
    /// The connection string without its password, for messages.
    package let displayName: String
    private let lock = Lock()
    private var connection: PostgresConnection?

    /// The table, created with the other state tables (``PostgresStateDatabase``).
    static let table = "development_schemas"

    /// Creates the store; nothing is connected until the first call.
    package init(connection: String) {
        connectionString = connection
        displayName = PostgresConnection.redacted(connection)
    }

    deinit { close() }

    /// Closes the connection (a later call opens a new one).
    package func close() {
        lock.withLock {
            connection?.close()
            connection = nil
        }
    }

    /// The app's stored schema and its version (incremented by every change),
    /// or nil when nothing was stored, or the version is still `knownVersion`.
    ///
    /// - Throws: ``SinkError`` (`.unavailable` when PostgreSQL cannot be reached).
    package func load(appId: String, unlessVersion knownVersion: Int64? = nil) throws(SinkError) -> (schema: Schema, version: Int64)? {
        try lock.withLock { () throws(SinkError) -> (schema: Schema, version: Int64)? in
            let rows = try run { (db: PostgresConnection) throws(PostgresError) -> [[String?]] in
                try db.queryText(
                    "SELECT schema, version FROM \(Self.table) WHERE app_id = $1 AND version <> $2",
                    [.text(appId), .text(String(knownVersion ?? -1))])
            }
            guard let row = rows.first, row.count == 2, let text = row[0], !text.isEmpty,
                let version = row[1].flatMap({ Int64($0) })
            else { return nil }
            return (try decode(text, appId: appId), version)
        }
    }

    /// Runs `body` holding the app's row lock, with the stored schema (nil
    /// if none yet); when `body` returns a schema to store, it is stored
    /// (version + 1) before the lock is released. Nothing is stored if
    /// `body` throws.
    ///
    /// - Returns: `body`'s result and the version now stored.
    package func learn<T>(appId: String, _ body: (Schema?) throws(SinkError) -> (store: Schema?, result: T))
        throws(SinkError) -> (result: T, version: Int64)
    {
        try lock.withLock { () throws(SinkError) -> (result: T, version: Int64) in
            let rows = try run { (db: PostgresConnection) throws(PostgresError) -> [[String?]] in
                try db.execute("BEGIN")
                // A concurrent first insert waits for the other transaction, then does nothing.
                try db.execute(
                    "INSERT INTO \(Self.table) (app_id, schema, version, updated_at) VALUES ($1, '', 0, $2) "
                        + "ON CONFLICT (app_id) DO NOTHING", [.text(appId), .text(String(Self.nowMillis()))])
                return try db.queryText("SELECT schema, version FROM \(Self.table) WHERE app_id = $1 FOR UPDATE", [.text(appId)])
            }
            guard let db = connection else { throw unavailable("the connection closed") }
            do throws(SinkError) {
                let text = rows.first?.first ?? nil
                let version = rows.first.flatMap { $0.count == 2 ? $0[1] : nil }.flatMap { Int64($0) } ?? 0
                let stored = try text.flatMap { text throws(SinkError) in text.isEmpty ? nil : try decode(text, appId: appId) }
                let outcome = try body(stored)
                var now = version
                if let grown = outcome.store {
                    guard let data = try? grown.jsonData() else {
                        throw SinkError(.statement, "the learned schema cannot be encoded", location: displayName)
                    }
                    try run { (db: PostgresConnection) throws(PostgresError) -> Void in
                        try db.execute(
                            "UPDATE \(Self.table) SET schema = $2, version = version + 1, updated_at = $3 WHERE app_id = $1",
                            [.text(appId), .text(String(decoding: data, as: UTF8.self)), .text(String(Self.nowMillis()))])
                    }
                    now = version + 1
                }
                try run { (db: PostgresConnection) throws(PostgresError) -> Void in try db.execute("COMMIT") }
                return (outcome.result, now)
            } catch {
                if db.isHealthy { _ = try? db.execute("ROLLBACK") }
                throw error
            }
        }
    }

    // MARK: - Plumbing

    /// Runs `body` on the connection (opened if needed); a failure closes
    /// it, so the next call starts on a fresh one. The caller holds `lock`.
    private func run<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(SinkError) -> T {
        do throws(PostgresError) {
            if connection == nil || connection?.isHealthy == false {
                connection?.close()
                connection = try PostgresConnection(connectionString)
            }
            return try body(connection!)
        } catch {
            if connection?.isHealthy == false || error.code == .connection {
                connection?.close()
                connection = nil
            } else if connection?.inTransaction == true {
                _ = try? connection?.execute("ROLLBACK")
            }
            throw SinkError(
                error.isTransient ? .unavailable : .statement,
                "the shared state (development schemas) failed: \(error.message)"
                    + (error.isTransient ? "; retry later" : ""), location: displayName)
        }
    }

    private func decode(_ text: String, appId: String) throws(SinkError) -> Schema {
        do {
            return try Schema(json: Data(text.utf8))
        } catch {
            throw SinkError(
                .statement,
                "the development schema of app \(appId) in \(Self.table) cannot be read: \(error); "
                    + "fix or delete its row", location: displayName)
        }
    }

    private func unavailable(_ reason: String) -> SinkError {
        SinkError(.unavailable, "the shared state (development schemas) is unavailable: \(reason); retry later", location: displayName)
    }

    private static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
