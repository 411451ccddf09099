import Foundation
import IngestHTTP

/// The ingest server's metrics, registered once and shared by the HTTP
/// observer, the upload handler and `/metrics`.
///
/// | metric | type | labels |
/// | --- | --- | --- |
/// | `ingest_http_requests_total` | counter | `method`, `route`, `status` |
/// | `ingest_http_request_duration_seconds` | histogram | `route` |
/// | `ingest_http_request_body_bytes_total` | counter | `route` |
/// | `ingest_uploads_total` | counter | `app`, `status` |
/// | `ingest_upload_replays_total` | counter | `app` |
/// | `ingest_objects_total` | counter | `app`, `outcome` (`accepted`, `duplicate`, `rejected`) |
/// | `ingest_upload_bytes_total` | counter | `app`, `form` (`compressed`, `inflated`) |
/// | `ingest_sink_write_duration_seconds` | histogram | `app` |
/// | `ingest_segment_lag_seconds` | histogram | `app` |
/// | `ingest_collection_rows` | gauge | `app`, `collection` |
/// | `ingest_collection_rows_estimated` | gauge | `app`, `collection` |
/// | `ingest_realm_sync_connections` | gauge | (registered by ``IngestService``) |
///
/// The `app` series are exported at 0 from start-up (``register(app:)``).
///
/// ```swift
/// let metrics = IngestMetrics()
/// metrics.objects.increment(["weather", "accepted"], by: 10)
/// print(metrics.registry.render())
/// ```
package final class IngestMetrics: Sendable {
    /// The registry `/metrics` renders.
    package let registry = MetricsRegistry()
    /// Responses by method, route pattern (`unmatched` for 404s and protocol errors) and status.
    package let requests: Counter
    /// Seconds from a complete request to its response, by route.
    package let requestDuration: Histogram
    /// Request body bytes by route.
    package let requestBodyBytes: Counter
    /// Upload requests by app and response status.
    package let uploads: Counter
    /// Uploads answered from a stored receipt (repeated segments).
    package let replays: Counter
    /// Uploaded objects by app and outcome.
    package let objects: Counter
    /// Upload bytes by app, compressed (as received) and inflated.
    package let uploadBytes: Counter
    /// Seconds each sink transaction took, by app.
    package let sinkWriteDuration: Histogram
    /// Seconds from a segment's creation (the client's clock) to its objects being stored, by app.
    package let segmentLag: Histogram

    /// The upload statuses exported at 0 from start-up: those the upload
    /// route answers for a configured app (Docs/Protocol.md).
    package static let uploadStatuses = ["200", "400", "401", "403", "413", "429", "500", "503"]
    /// Buckets of ``segmentLag``: 100 ms to a day (devices may upload after days offline).
    package static let lagBuckets: [Double] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21_600, 86_400]

    /// Registers every metric.
    package init() {
        requests = registry.counter(
            "ingest_http_requests_total", help: "HTTP responses by method, route and status.",
            labels: ["method", "route", "status"])
        requestDuration = registry.histogram(
            "ingest_http_request_duration_seconds",
            help: "Seconds from a complete request to its response.", labels: ["route"])
        requestBodyBytes = registry.counter(
            "ingest_http_request_body_bytes_total", help: "Request body bytes received.",
            labels: ["route"])
        uploads = registry.counter(
            "ingest_uploads_total", help: "Segment uploads by app and response status.",
            labels: ["app", "status"])
        replays = registry.counter(
            "ingest_upload_replays_total",
            help: "Uploads of already received segments, answered from their receipt.", labels: ["app"])
        objects = registry.counter(
            "ingest_objects_total", help: "Uploaded objects by app and outcome.",
            labels: ["app", "outcome"])
        uploadBytes = registry.counter(
            "ingest_upload_bytes_total", help: "Uploaded segment bytes, compressed and inflated.",
            labels: ["app", "form"])
        sinkWriteDuration = registry.histogram(
            "ingest_sink_write_duration_seconds",
            help: "Seconds per sink transaction (one segment).", labels: ["app"])
        segmentLag = registry.histogram(
            "ingest_segment_lag_seconds",
            help: "Seconds from a segment's creation on the client to its objects being stored.",
            labels: ["app"], buckets: Self.lagBuckets)
    }

    /// Exports every series of app `id` whose labels are known in advance at
    /// 0, before its first upload.
    package func register(app id: String) {
        for status in Self.uploadStatuses { uploads.touch([id, status]) }
        replays.touch([id])
        for outcome in ["accepted", "duplicate", "rejected"] { objects.touch([id, outcome]) }
        for form in ["compressed", "inflated"] { uploadBytes.touch([id, form]) }
        sinkWriteDuration.touch([id])
        segmentLag.touch([id])
    }

    /// Records one HTTP response (install as the server's request observer).
    package func observe(_ summary: HTTPRequestSummary) {
        let route = summary.routePattern ?? "unmatched"
        requests.increment([summary.method, route, String(summary.status)])
        requestDuration.observe(summary.durationSeconds, [route])
        if summary.requestBodyBytes > 0 { requestBodyBytes.increment([route], by: Double(summary.requestBodyBytes)) }
    }
}
