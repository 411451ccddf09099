import CoreMetrics
import Foundation

extension App {
    /// How an ``App`` reaches its server and where it keeps its users,
    /// tokens and segment stores. Every property has a documented default.
    ///
    /// ```swift
    /// var configuration = App.Configuration()
    /// configuration.baseURL = URL(string: "http://127.0.0.1:9090")!
    /// configuration.metadataDirectory = "/var/lib/weather-station/dataingest"
    /// let app = App(id: "dev-abc12345", configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The server's base URL. Default: the environment variable
        /// `DATAINGEST_BASE_URL` if set, else `http://127.0.0.1:9090` (the
        /// development server's default port).
        public var baseURL: URL
        /// Seconds to wait for an answer to an auth request. Default 30.
        public var requestTimeout: TimeInterval = 30
        /// Where users, their tokens (files readable by the owner only) and
        /// their segment stores live: `<metadataDirectory>/<app id>/users/<user id>/`.
        /// Default: the environment variable `DATAINGEST_METADATA_DIRECTORY`
        /// if set, else `dataingest-metadata` in the current directory.
        public var metadataDirectory: String
        /// The access token is refreshed this many seconds before it expires
        /// (at most half its lifetime). Default 60.
        public var tokenRefreshMargin: TimeInterval = 60
        /// How sync sessions upload. Default ``SyncSession/Configuration/init()``.
        public var sync: SyncSession.Configuration = .init()
        /// The settings of each user's segment store; `directory` is replaced
        /// by the user's store directory. Default: the store's defaults
        /// (interval durability, segments sealed after 1 s or 4 MiB, no encryption).
        ///
        /// Set ``SegmentStore/Configuration/encryptionKey`` (32 bytes) here to
        /// encrypt every user's pending data at rest: synced realms, `LogWriter`,
        /// `IngestLogger` and `IngestRecorder` all commit to these stores.
        ///
        /// ```swift
        /// configuration.segmentStore.encryptionKey = keyFromKeychain
        /// ```
        public var segmentStore: SegmentStore.Configuration = .init(directory: "")
        /// Seconds to wait for a TCP connection to the server (the socket
        /// transport; `URLSession` has no separate connect timeout). Default 10.
        public var connectTimeout: TimeInterval = 10
        /// Which built-in HTTP transport to use when ``transport`` is `nil`.
        /// Default ``TransportKind/automatic``: ``HTTPClientTransport`` (plain
        /// sockets, keep-alive) for `http://` base URLs, ``URLSessionTransport``
        /// for `https://`. Set `.urlSession` to use `URLSession` for `http://` too.
        public var transportKind: TransportKind = .automatic
        /// The HTTP transport. Default `nil`: the one ``transportKind``
        /// selects, with ``SyncSession/Configuration/maxUploadsInFlight`` + 1
        /// connections. Set it to wrap a transport (for example to inject
        /// faults in tests).
        public var transport: (any SyncTransport)?
        /// Seconds a normal exit of the process (`main` returns, or `exit()`
        /// is called) waits for what the sync sessions have pending: the
        /// active segment is sealed and uploaded, as error-reporting SDKs
        /// flush at exit. The wait ends as soon as everything is acknowledged,
        /// and at once when the server cannot be reached (the data stays on
        /// disk for the next run); suspended sessions are left alone. `0` turns
        /// it off. Default: the environment variable
        /// `DATAINGEST_EXIT_UPLOAD_GRACE_SECONDS` if set, else 5.
        /// See ``App`` ("At exit").
        ///
        /// ```swift
        /// configuration.exitUploadGracePeriod = 0   // a CLI that must exit at once
        /// ```
        public var exitUploadGracePeriod: TimeInterval
        /// The swift-metrics backend that this app's segment stores, sync
        /// sessions and log writers report to (names and meanings in
        /// Docs/ClientMetrics.md). Default `nil`: the one bootstrapped with
        /// `MetricsSystem.bootstrap`; while none is, nothing is reported (no
        /// metric is even made). A store's own
        /// ``SegmentStore/Configuration/metricsFactory`` wins over this one.
        public var metricsFactory: (any MetricsFactory)? = nil

        /// A configuration with the defaults above.
        public init(baseURL: URL? = nil, metadataDirectory: String? = nil) {
            let environment = ProcessInfo.processInfo.environment
            self.baseURL =
                baseURL
                ?? environment["DATAINGEST_BASE_URL"].flatMap { URL(string: $0) }
                ?? URL(string: "http://127.0.0.1:9090")!
            self.metadataDirectory =
                metadataDirectory
                ?? environment["DATAINGEST_METADATA_DIRECTORY"]
                ?? FileManager.default.currentDirectoryPath + "/dataingest-metadata"
            self.exitUploadGracePeriod =
                environment["DATAINGEST_EXIT_UPLOAD_GRACE_SECONDS"]
                .flatMap { TimeInterval($0) }.map { max(0, $0) } ?? 5
        }
    }
}
