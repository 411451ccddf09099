import IngestCore
import IngestHTTP
import Logging

/// The HTTP side of the composition: the service's routes and the HTTP
/// server settings that observe them.
extension IngestService {
    /// Registers the auth endpoints, the upload endpoint, the Realm sync
    /// endpoint and its HTTP calls (Docs/RealmCompatibility.md), `GET /metrics`,
    /// `GET /healthz` and the status page at `GET /` (Docs/Protocol.md).
    package func addRoutes(to router: inout HTTPRouter) {
        router.addAuthRoutes(auth)
        router.post(ProtocolRoutes.uploadPattern, uploads.handle)
        realmSync.addRoutes(to: &router)
        let metrics = self.metrics
        router.get(ProtocolRoutes.metricsPath) { _ in
            HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: Array(metrics.registry.render().utf8))
        }
        router.addHealthRoute(at: ProtocolRoutes.healthPath)
        router.get(ProtocolRoutes.statusPagePath) { [self] _ in
            HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
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
        logger.log(
            level: level, "\(summary.method) \(summary.path) \(summary.status)",
            metadata: [
                "route": .string(summary.routePattern ?? "unmatched"),
                "status": .stringConvertible(summary.status),
                "duration_ms": .stringConvertible((summary.durationSeconds * 1_000_000).rounded() / 1_000),
                "request_bytes": .stringConvertible(summary.requestBodyBytes),
                "response_bytes": .stringConvertible(summary.responseBodyBytes),
            ])
    }
}
