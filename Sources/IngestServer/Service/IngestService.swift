import Foundation
import IngestCore
import IngestSupport
import Logging

/// The ingest server's composition: the configuration's apps with their
/// sinks and schemas, the HTTP-free services (``AuthService``,
/// ``UploadService``), metrics and the status page, wired onto an
/// ``HTTPRouter`` by the route adapters (Routes/IngestService+Routes.swift).
///
/// ```swift
/// let config = try ServerConfiguration(contentsOfFile: "ingest.json")
/// let service = try IngestService(configuration: config)
/// var router = HTTPRouter()
/// service.addRoutes(to: &router)
/// let server = HTTPServer(configuration: service.httpServerConfiguration, router: router)
/// try server.start()
/// try server.run()
/// service.close()
/// ```
package final class IngestService: Sendable {
    /// Settings that are not part of the JSON configuration file.
    package struct Options: Sendable {
        /// The SQLite sinks' settings. Default: WAL, `synchronous=FULL`.
        package var sqlite = SQLiteSink.Configuration()
        /// The PostgreSQL sinks' settings. Default: 8 connections per app.
        package var postgres = PostgresSink.Configuration()
        /// The ClickHouse sinks' settings. Default: 20 ms linger.
        package var clickhouse = ClickHouseSink.Configuration()
        /// At most this many uploads processed at once (429 above). Default 16.
        package var maxConcurrentUploads = 16
        /// Seconds between refreshes of the sinks' row counts and health (and,
        /// on shared state, of development schemas other instances learned). Default 5.
        package var sinkRefreshSeconds: Double = 5
        /// The server's own log: start-up problems, failed uploads, refused
        /// schema changes and one line per request (its level from the
        /// status: info below 400, notice for 4xx, error for 5xx). Default:
        /// swift-log's bootstrapped handler, label `ingest-server`.
        package var logger = Logger(label: "ingest-server")

        /// Creates the defaults.
        package init() {}
    }

    /// The configuration the service runs.
    package let configuration: ServerConfiguration
    /// Authentication for all apps.
    package let auth: AuthService
    /// The apps, in configuration order.
    package let apps: [IngestApp]
    /// The metrics `/metrics` renders.
    package let metrics: IngestMetrics
    /// Uploads of sealed segments.
    package let uploads: UploadService
    /// The Realm sync endpoint's sessions (their objects go through ``uploads``).
    package let realmSync: RealmSyncService
    /// The server's own log (``Options/logger``).
    package let logger: Logger
    /// When the service started (seconds since 1970).
    package let startedAt: Double
    /// Refreshes the sinks' row counts and health in the background.
    package let sinkMonitor: SinkMonitor

    /// Opens the state database and every app's sink, and prepares the schemas.
    ///
    /// - Throws: ``IngestServiceError`` naming the app and what to fix.
    package init(configuration: ServerConfiguration, options: Options = Options()) throws(IngestServiceError) {
        self.configuration = configuration
        // The state store creates the state directory (private: mode 0700).
        do {
            auth = try AuthService(configuration: configuration)
        } catch {
            throw IngestServiceError("cannot open the state database: \(error.message)")
        }
        var apps: [IngestApp] = []
        // Development mode's learned schemas live in the shared state when there is one.
        let sharedSchemas = configuration.sharedStatePostgres.map { SharedSchemaStore(connection: $0) }
        for app in configuration.apps {
            let sink: any Sink
            switch app.sink {
            case .sqlite:
                let path = configuration.sqliteSinkPath(for: app) ?? "\(app.id).sqlite"
                do {
                    sink = try SQLiteSink(path: path, configuration: options.sqlite)
                } catch {
                    throw IngestServiceError(error.description, appId: app.id)
                }
            case .postgres(let connection):
                do {
                    sink = try PostgresSink(connection: connection, configuration: options.postgres)
                } catch {
                    throw IngestServiceError(error.description, appId: app.id)
                }
            case .clickhouse(let url, let database, let cluster):
                do {
                    // ClickHouse has no transactions: receipts live in the shared
                    // PostgreSQL state, or in a SQLite file of the state directory.
                    let receipts: any ReceiptStore
                    if let shared = configuration.sharedStatePostgres {
                        receipts = try PostgresSink(
                            connection: shared, configuration: options.postgres,
                            purpose: "the ClickHouse app's receipts table in the shared state")
                    } else {
                        let receiptsPath = (configuration.stateDirectory as NSString)
                            .appendingPathComponent("\(app.id).clickhouse-receipts.sqlite")
                        receipts = try SQLiteSink(path: receiptsPath, configuration: options.sqlite)
                    }
                    var clickhouse = options.clickhouse
                    clickhouse.cluster = cluster
                    sink = try ClickHouseSink(url: url, database: database, receipts: receipts, configuration: clickhouse)
                } catch {
                    throw IngestServiceError(error.description, appId: app.id)
                }
            }
            let schemaFile = (configuration.stateDirectory as NSString).appendingPathComponent("\(app.id).schema.json")
            do {
                apps.append(try IngestApp(configuration: app, sink: sink, schemaFile: schemaFile, sharedSchemas: sharedSchemas))
            } catch {
                sink.close()
                throw IngestServiceError(error.message, appId: app.id)
            }
        }
        self.apps = apps
        let metrics = IngestMetrics()
        self.metrics = metrics
        var uploadConfiguration = UploadService.Configuration()
        uploadConfiguration.gzipLimits = GzipLimits(
            maxOutputBytes: configuration.limits.maxInflatedBytes,
            maxRatio: configuration.limits.maxInflateRatio)
        uploadConfiguration.maxConcurrentUploads = options.maxConcurrentUploads
        logger = options.logger
        uploads = UploadService(
            apps: apps, auth: auth, metrics: metrics, configuration: uploadConfiguration,
            logger: options.logger)
        var realmConfiguration = RealmSyncService.Configuration()
        let http = configuration.httpServerConfiguration
        realmConfiguration.maxConnections = http.maxConnections
        realmConfiguration.writeTimeoutSeconds = http.writeTimeout
        realmConfiguration.idleTimeoutSeconds = configuration.limits.syncIdleTimeoutSeconds
        realmSync = RealmSyncService(uploads: uploads, auth: auth, configuration: realmConfiguration, logger: options.logger)
        startedAt = Date().timeIntervalSince1970
        for app in apps { metrics.register(app: app.id) }
        // What the sinks hold, whoever wrote it: counted before the first
        // request and every few seconds after, never on a request.
        sinkMonitor = SinkMonitor(apps: apps, interval: options.sinkRefreshSeconds, logger: options.logger)
        sinkMonitor.refresh()
        sinkMonitor.start()
        let readyApps = apps
        metrics.registry.gauge(
            "ingest_collection_rows",
            help: "Rows the sink holds per collection, written by any instance (refreshed every few seconds; "
                + "an estimate where ingest_collection_rows_estimated is 1).",
            labels: ["app", "collection"]
        ) {
            readyApps.flatMap { app in
                (app.rowCounts?.counts ?? []).map { ([app.id, $0.collection], Double($0.count)) }
            }
        }
        let realm = realmSync
        metrics.registry.gauge(
            "ingest_realm_sync_connections",
            help: "Open Realm sync WebSocket connections on this instance.", labels: []
        ) {
            [([], Double(realm.openConnections))]
        }
        metrics.registry.gauge(
            "ingest_collection_rows_estimated",
            help: "1 when ingest_collection_rows is the database's estimate (a large PostgreSQL table), 0 when exact.",
            labels: ["app", "collection"]
        ) {
            readyApps.flatMap { app in
                (app.rowCounts?.counts ?? []).map { ([app.id, $0.collection], $0.isEstimate ? 1 : 0) }
            }
        }
    }

    /// Stops the sink monitor and closes every sink (call after the HTTP server has stopped).
    package func close() {
        sinkMonitor.stop()
        for app in apps {
            app.sink.close()
            app.sharedSchemas?.close()
        }
    }
}
