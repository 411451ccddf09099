import Foundation
import IngestCore
import Testing
@testable import IngestServer

/// `/metrics` right after start-up: every series whose labels are known in
/// advance is exported at 0, so rates and alerts work before the first event
/// (Prometheus convention; issue 22, point 5).
@Suite("Metrics at start-up")
struct MetricsStartupTests {
    @Test("known label sets are exported at 0 before the first upload, for every app")
    func seriesAtZero() throws {
        let server = try IngestTestServer(config: uploadTestConfig)
        defer { server.stop() }
        let metrics = try server.call("GET", "/metrics").text
        for app in ["shop", "other"] {
            var expected = [
                #"ingest_upload_replays_total{app="\#(app)"} 0"#,
                #"ingest_sink_write_duration_seconds_count{app="\#(app)"} 0"#,
                #"ingest_sink_write_duration_seconds_bucket{app="\#(app)",le="+Inf"} 0"#,
            ]
            expected += ["accepted", "duplicate", "rejected"].map { #"ingest_objects_total{app="\#(app)",outcome="\#($0)"} 0"# }
            expected += ["compressed", "inflated"].map { #"ingest_upload_bytes_total{app="\#(app)",form="\#($0)"} 0"# }
            expected += ["200", "400", "401", "403", "413", "429", "500", "503"].map {
                #"ingest_uploads_total{app="\#(app)",status="\#($0)"} 0"#
            }
            for line in expected { #expect(metrics.contains(line + "\n"), "missing: \(line)") }
        }
        #expect(metrics.contains(#"ingest_collection_rows{app="shop",collection="WeatherSensor"} 0"# + "\n"))
        #expect(metrics.contains(#"ingest_collection_rows{app="other",collection="Log"} 0"# + "\n"))

        // After an upload the series count from 0, and a replay shows in its own series.
        let token = try server.login(app: "shop").access
        let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        #expect(try server.upload(app: "shop", token: token, body: body).status == 200)
        #expect(try server.upload(app: "shop", token: token, body: body).status == 200)
        let after = try server.call("GET", "/metrics").text
        #expect(after.contains(#"ingest_objects_total{app="shop",outcome="accepted"} 1"# + "\n"))
        #expect(after.contains(#"ingest_upload_replays_total{app="shop"} 1"# + "\n"))
        #expect(after.contains(#"ingest_uploads_total{app="shop",status="200"} 2"# + "\n"))
        #expect(after.contains(#"ingest_objects_total{app="other",outcome="accepted"} 0"# + "\n"))
    }
}
