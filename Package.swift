// swift-tools-version:6.0
import PackageDescription

// DataIngest: stream immutable data from Swift apps into a real database,
// every record exactly once. Swift package dependencies: the three packages
// every server-side Swift app already has (swift-log, swift-argument-parser,
// swift-metrics); everything else is the toolchain and Debian's C libraries,
// wrapped as system library targets.
let package = Package(
    name: "DataIngest",
    products: [
        .library(name: "IngestCore", targets: ["IngestCore"]),
        .library(name: "DataIngest", targets: ["DataIngest"]),
        .library(name: "IngestHTTP", targets: ["IngestHTTP"]),
        .library(name: "RealmSync", targets: ["RealmSync"]),
        .executable(name: "ingest-server", targets: ["ingest-server"]),
        .executable(name: "ingest-bench", targets: ["ingest-bench"]),
        .executable(name: "WeatherStation", targets: ["WeatherStation"]),
        .executable(name: "RetailInvoices", targets: ["RetailInvoices"]),
        .executable(name: "ServerLogging", targets: ["ServerLogging"]),
        .executable(name: "ingest-forward", targets: ["ingest-forward"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
    ],
    targets: [
        // MARK: C libraries (Debian -dev packages)
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        // Linux kernel interfaces not in the Glibc module: epoll, eventfd and
        // accept4 for the HTTP server's event loop, statfs for the segment
        // store's file-system check. Headers only.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),

        // MARK: Infrastructure shared by the modules below (package access):
        // locks, gzip, the HTTP/1.1 client, libcrypto, base64, the SQLite
        // layer, the JSON parser
        .target(name: "IngestSupport", dependencies: ["CCrypto", "CZlib", "CSQLite"]),

        // MARK: The formats client and server share: BSON, Extended JSON,
        // ObjectId, Decimal128, schema, the segment file
        .target(name: "IngestCore", dependencies: ["IngestSupport", "CCrypto"]),

        // MARK: Realm's sync protocol: WebSocket frames, sync messages,
        // changesets, and the documents a changeset creates (transport-free)
        .target(name: "RealmSync", dependencies: ["IngestCore", "IngestSupport"]),

        // MARK: Client SDK: object model, realms, segment store, sync
        .target(
            name: "DataIngest",
            dependencies: [
                "IngestCore", "IngestSupport", "CLinux",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),

        // MARK: HTTP/1.1 server: parser, event loop, router, connections
        .target(name: "IngestHTTP", dependencies: ["IngestSupport", "CLinux", .product(name: "Logging", package: "swift-log")]),

        // MARK: Server: apps, auth, uploads, sinks, the Realm sync endpoint, route adapters
        .target(
            name: "IngestServer",
            dependencies: [
                "IngestHTTP", "IngestCore", "RealmSync", "IngestSupport", "CCrypto", "CPostgres",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "ingest-server",
            dependencies: [
                "IngestServer", "IngestHTTP", "IngestCore", "IngestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // MARK: The project's command-line conventions on swift-argument-parser
        // (usage errors exit 2, options every ingest client takes)
        .target(name: "IngestCommandLine", dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")]),

        // MARK: Samples (each folder has a README)
        .executableTarget(
            name: "WeatherStation",
            dependencies: ["DataIngest", "IngestCommandLine", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Samples/WeatherStation", exclude: ["README.md"]),
        .executableTarget(
            name: "RetailInvoices",
            dependencies: [
                // Recording: DataIngest's public API only. verify and export read
                // the sink's database through the project's own SQLite layer
                // (IngestSupport) and libpq connection (IngestServer), and
                // format dates with IngestCore's ISODate.
                "DataIngest", "IngestCore", "IngestSupport", "IngestServer", "IngestCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/RetailInvoices", exclude: ["README.md"]),
        .executableTarget(
            name: "ServerLogging",
            dependencies: [
                "DataIngest", "IngestHTTP", "IngestCommandLine",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Samples/ServerLogging", exclude: ["README.md"]),
        .executableTarget(
            name: "ingest-forward",
            dependencies: [
                "DataIngest", "IngestSupport", "IngestCommandLine", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            path: "Samples/LogForwarder", exclude: ["README.md"]),

        // MARK: Benchmarks (run in release mode)
        .executableTarget(
            name: "ingest-bench",
            dependencies: [
                "IngestCore", "IngestSupport", "DataIngest", "IngestServer", "RealmSync", "IngestCommandLine",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/ingest-bench"),

        // MARK: Tests
        // What the test targets share: temporary directories, the
        // ingest-server launcher, clocks, seeded randomness, CI requirements.
        .target(name: "IngestTestSupport", path: "Tests/Support/IngestTestSupport"),
        // A child process the segment store's crash tests start and kill -9.
        .executableTarget(
            name: "store-crash-child", dependencies: ["DataIngest"],
            path: "Tests/Support/store-crash-child"),
        // A server app the swift-log backend's crash test starts and kill -9s.
        .executableTarget(
            name: "log-handler-child",
            dependencies: ["DataIngest", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Support/log-handler-child"),
        .testTarget(name: "IngestSupportTests", dependencies: ["IngestSupport", "IngestTestSupport"]),
        .testTarget(name: "IngestCoreTests", dependencies: ["IngestCore", "IngestSupport", "IngestTestSupport"]),
        // Reads the recorded Realm traffic in ../shared/testdata/realm-sync.
        // The replays run against a real ingest-server process (built first).
        .testTarget(
            name: "RealmSyncTests",
            dependencies: ["RealmSync", "IngestCore", "IngestSupport", "IngestServer", "IngestTestSupport", "ingest-server"]),
        // A client process the sync tests start (the seed's code) and kill -9.
        .executableTarget(
            name: "sync-client-child", dependencies: ["DataIngest", "IngestSupport"],
            path: "Tests/Support/sync-client-child"),
        // The seed page's program: its code exactly, but for `import DataIngest`.
        .executableTarget(name: "seed-program", dependencies: ["DataIngest"], path: "Tests/Support/seed-program"),
        .testTarget(
            name: "DataIngestTests",
            dependencies: [
                "DataIngest", "IngestSupport", "IngestTestSupport", "store-crash-child", "sync-client-child", "seed-program",
                "log-handler-child", "ingest-server", "CCrypto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        // Depends on the executable so that `swift test` builds the server
        // binary the tests start as a real process.
        .testTarget(
            name: "IngestServerTests", dependencies: ["IngestServer", "IngestHTTP", "IngestSupport", "IngestTestSupport", "ingest-server"]),
        // The HTTP layer in process and against a real ingest-server process.
        .testTarget(
            name: "IngestHTTPTests",
            dependencies: [
                "IngestHTTP", "IngestSupport", "IngestTestSupport", "ingest-server",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Runs the built sample binaries against a real ingest-server.
        .testTarget(
            name: "SamplesTests",
            dependencies: [
                "ingest-server", "WeatherStation", "RetailInvoices", "ServerLogging", "ingest-forward", "ingest-bench", "IngestSupport",
                "IngestTestSupport", "IngestServer",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
