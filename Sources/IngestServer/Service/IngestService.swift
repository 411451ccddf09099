import Foundation
import IngestCore
import IngestHTTP
import IngestSupport
import Logging

/// The ingest server's composition: the configuration's apps with their
/// sinks and schemas, the HTTP-free services (``AuthService``,
/// ``UploadService``), metrics and the status page, wired onto an
/// ``HTTPRouter`` through the route adapters (Routes/).
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
    /// The server's own log (``Options/logger``).
    package let logger: Logger
    /// When the service started (seconds since 1970).
    package let startedAt: Double

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
                    let receipts: any Sink
                    if let shared = configuration.sharedStatePostgres {
                        receipts = try PostgresSink(connection: shared, configuration: options.postgres)
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
                apps.append(try IngestApp(configuration: app, sink: sink, schemaFile: schemaFile))
            } catch {
                sink.close()
                throw IngestServiceError(error.message, appId: app.id)
            }
        }
        self.apps = apps
        let metrics = IngestMetrics()
        self.metrics = metrics
        var uploadConfiguration = UploadService.Configuration()
        uploadConfiguration.gzipLimits = GzipLimits(maxOutputBytes: configuration.limits.maxInflatedBytes,
                                                    maxRatio: configuration.limits.maxInflateRatio)
        uploadConfiguration.maxConcurrentUploads = options.maxConcurrentUploads
        logger = options.logger
        uploads = UploadService(apps: apps, auth: auth, metrics: metrics, configuration: uploadConfiguration,
                                logger: options.logger)
        startedAt = Date().timeIntervalSince1970
        let readyApps = apps
        metrics.registry.gauge("ingest_collection_rows", help: "Rows stored per collection.", labels: ["app", "collection"]) {
            readyApps.flatMap { app in app.sink.collectionCounts().map { ([app.id, $0.collection], Double($0.count)) } }
        }
    }

    /// Registers the auth endpoints, the upload endpoint, `GET /metrics`,
    /// `GET /healthz` and the status page at `GET /` (Docs/Protocol.md).
    package func addRoutes(to router: inout HTTPRouter) {
        router.addAuthRoutes(auth)
        router.post(ProtocolRoutes.uploadPattern, uploads.handle)
        let metrics = self.metrics
        router.get(ProtocolRoutes.metricsPath) { _ in
            HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                         body: Array(metrics.registry.render().utf8))
        }
        router.addHealthRoute(at: ProtocolRoutes.healthPath)
        router.get(ProtocolRoutes.statusPagePath) { [self] _ in
            HTTPResponse(status: .ok, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                         body: Array(StatusPage(service: self).html.utf8))
        }
    }

    /// The HTTP settings of the configuration, with the observer that
    /// records metrics and logs each request, and the logger for the HTTP
    /// layer's own messages.
    package var httpServerConfiguration: HTTPServerConfiguration {
        var http = configuration.httpServerConfiguration
        let metrics = self.metrics
        let logger = self.logger
        http.requestObserver = { summary in
            metrics.observe(summary)
            Self.logRequest(summary, to: logger)
        }
        http.logger = logger
        return http
    }

    /// One line per response: `POST /api/client/v2.0/app/x/ingest 200`, its
    /// level from the status, the details as metadata.
    static func logRequest(_ summary: HTTPRequestSummary, to logger: Logger) {
        let level: Logger.Level
        switch summary.status {
        case 500...: level = .error
        case 400..<500: level = .notice
        default: level = .info
        }
        guard logger.logLevel <= level else { return }
        logger.log(level: level, "\(summary.method) \(summary.path) \(summary.status)", metadata: [
            "route": .string(summary.routePattern ?? "unmatched"),
            "status": .stringConvertible(summary.status),
            "duration_ms": .stringConvertible((summary.durationSeconds * 1_000_000).rounded() / 1_000),
            "request_bytes": .stringConvertible(summary.requestBodyBytes),
            "response_bytes": .stringConvertible(summary.responseBodyBytes),
        ])
    }

    /// Closes every sink (call after the HTTP server has stopped).
    package func close() {
        for app in apps { app.sink.close() }
    }
}
