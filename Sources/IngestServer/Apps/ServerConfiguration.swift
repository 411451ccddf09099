import Foundation

/// Everything the ingest server needs to run: where it listens, where it
/// keeps its state, its limits and its apps.
///
/// ```swift
/// let config = try ServerConfiguration(contentsOfFile: "ingest.json")
/// // or, with no config file:
/// let dev = try ServerConfiguration.development()
/// print("app id:", dev.apps[0].id)
/// ```
public struct ServerConfiguration: Sendable {
    /// The address to bind. Default `127.0.0.1` (use `0.0.0.0` to accept remote clients).
    public var host: String = "127.0.0.1"
    /// The TCP port. Default 8080; 0 picks a free port.
    public var port: Int = 8080
    /// The directory for the state database (users, tokens, API keys,
    /// generated secrets) and relative SQLite sink paths. Default `./ingest-data`.
    public var stateDirectory: String = "./ingest-data"
    /// Request and resource limits.
    public var limits: Limits = .init()
    /// The apps served (ids unique).
    public var apps: [AppConfiguration] = []

    public init(host: String = "127.0.0.1", port: Int = 8080, stateDirectory: String = "./ingest-data",
                limits: Limits = .init(), apps: [AppConfiguration] = []) {
        self.host = host
        self.port = port
        self.stateDirectory = stateDirectory
        self.limits = limits
        self.apps = apps
    }

    /// The app with `id`, if configured.
    public func app(_ id: String) -> AppConfiguration? {
        apps.first { $0.id == id }
    }

    /// The state database file: `<stateDirectory>/state.sqlite`.
    public var stateDatabasePath: String {
        (stateDirectory as NSString).appendingPathComponent("state.sqlite")
    }

    /// The SQLite sink path of `app` resolved against ``stateDirectory``, or
    /// `nil` if the app's sink is not SQLite.
    public func sqliteSinkPath(for app: AppConfiguration) -> String? {
        guard case .sqlite(let path) = app.sink else { return nil }
        return path.hasPrefix("/") ? path : (stateDirectory as NSString).appendingPathComponent(path)
    }

    /// Limits that protect the server from oversized or slow clients.
    public struct Limits: Sendable, Hashable {
        /// Largest request header block in bytes. Default 16 KiB.
        public var maxHeaderBytes: Int = 16 * 1024
        /// Largest request body in bytes (compressed upload size). Default 32 MiB.
        public var maxBodyBytes: Int = 32 * 1024 * 1024
        /// Largest inflated upload in bytes. Default 256 MiB.
        public var maxInflatedBytes: Int = 256 * 1024 * 1024
        /// Largest inflated/compressed size ratio accepted. Default 200.
        public var maxInflateRatio: Int = 200
        /// Most simultaneous connections. Default 512.
        public var maxConnections: Int = 512
        /// Time allowed to receive one whole request, in seconds. Default 30.
        public var requestTimeoutSeconds: Int = 30
        /// Time an idle keep-alive connection stays open, in seconds. Default 60.
        public var idleTimeoutSeconds: Int = 60

        public init(maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 32 * 1024 * 1024,
                    maxInflatedBytes: Int = 256 * 1024 * 1024, maxInflateRatio: Int = 200,
                    maxConnections: Int = 512, requestTimeoutSeconds: Int = 30, idleTimeoutSeconds: Int = 60) {
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
            self.maxInflatedBytes = maxInflatedBytes
            self.maxInflateRatio = maxInflateRatio
            self.maxConnections = maxConnections
            self.requestTimeoutSeconds = requestTimeoutSeconds
            self.idleTimeoutSeconds = idleTimeoutSeconds
        }
    }
}
