import Foundation
import Logging

/// Everything the ingest server needs to run: where it listens, where it
/// keeps its state, its limits and its apps.
///
/// ```swift
/// let config = try ServerConfiguration(contentsOfFile: "ingest.json")
/// // or, with no config file:
/// let dev = try ServerConfiguration.development()
/// print("app id:", dev.apps[0].id)
/// ```
package struct ServerConfiguration: Sendable {
    /// The address to bind. Default `127.0.0.1` (use `0.0.0.0` to accept remote clients).
    package var host: String = "127.0.0.1"
    /// The TCP port. Default 9090; 0 picks a free port.
    package var port: Int = 9090
    /// The directory for the state database (users, tokens, API keys,
    /// generated secrets) and relative SQLite sink paths. Default `./ingest-data`.
    package var stateDirectory: String = "./ingest-data"
    /// Request and resource limits.
    package var limits: Limits = .init()
    /// The apps served (ids unique).
    package var apps: [AppConfiguration] = []
    /// A PostgreSQL connection string for the server state (users, refresh
    /// tokens, API keys, app secrets, and the ClickHouse sinks' receipts),
    /// shared by several ingest servers. Default nil: `state.sqlite` in the
    /// state directory. JSON: `"sharedState": { "kind": "postgres", "connection": "…" }`.
    package var sharedStatePostgres: String? = nil
    /// The lowest level of the server's own log (`trace` … `critical`).
    /// Default nil: `ingest-server` uses `--log-level`, then `INGEST_LOG_LEVEL`,
    /// then this, then `info`. JSON: `"logLevel": "notice"`.
    package var logLevel: Logger.Level? = nil

    package init(
        host: String = "127.0.0.1", port: Int = 9090, stateDirectory: String = "./ingest-data",
        limits: Limits = .init(), apps: [AppConfiguration] = []
    ) {
        self.host = host
        self.port = port
        self.stateDirectory = stateDirectory
        self.limits = limits
        self.apps = apps
    }

    /// The app with `id`, if configured.
    package func app(_ id: String) -> AppConfiguration? {
        apps.first { $0.id == id }
    }

    /// The state database file: `<stateDirectory>/state.sqlite`.
    package var stateDatabasePath: String {
        (stateDirectory as NSString).appendingPathComponent("state.sqlite")
    }

    /// The SQLite sink path of `app` resolved against ``stateDirectory``, or
    /// `nil` if the app's sink is not SQLite.
    package func sqliteSinkPath(for app: AppConfiguration) -> String? {
        guard case .sqlite(let path) = app.sink else { return nil }
        return path.hasPrefix("/") ? path : (stateDirectory as NSString).appendingPathComponent(path)
    }

    /// Limits that protect the server from oversized, slow or too many
    /// clients. Defaults match ``HTTPServerConfiguration``'s.
    package struct Limits: Sendable, Hashable {
        /// Threads that run request handlers. Default 4.
        package var workerThreads: Int = 4
        /// Open connections above which new ones get a 503. Default 1024.
        package var maxConnections: Int = 1024
        /// Largest request line plus header fields, in bytes. Default 16 KiB.
        package var maxHeaderBytes: Int = 16 * 1024
        /// Most header fields per request. Default 100.
        package var maxHeaderCount: Int = 100
        /// Largest request body in bytes (the compressed upload). Default 64 MiB.
        package var maxBodyBytes: Int = 64 * 1024 * 1024
        /// Largest inflated upload in bytes. Default 256 MiB.
        package var maxInflatedBytes: Int = 256 * 1024 * 1024
        /// Largest inflated/compressed size ratio accepted. Default 200.
        package var maxInflateRatio: Int = 200
        /// Seconds a client has to send a complete request head. Default 10.
        package var headerTimeoutSeconds: Double = 10
        /// Seconds a request body may stall between two reads. Default 30.
        package var bodyIdleTimeoutSeconds: Double = 30
        /// Seconds an idle keep-alive connection stays open. Default 30.
        package var keepAliveTimeoutSeconds: Double = 30
        /// Seconds a response may stall because the client does not read. Default 30.
        package var writeTimeoutSeconds: Double = 30
        /// Seconds graceful shutdown waits for in-flight requests. Default 10.
        package var shutdownGraceSeconds: Double = 10
        /// Seconds a Realm sync connection may stay silent before the server
        /// closes it with 1001 (Realm clients ping every minute). Default 180.
        package var syncIdleTimeoutSeconds: Double = 180

        /// Creates limits with the defaults above.
        package init() {}
    }
}
