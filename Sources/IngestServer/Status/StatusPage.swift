import Foundation

/// The HTML status page at `GET /`: per app its sink, the objects received
/// since start-up, the rows per collection, and an inline SVG plot of the
/// accepted objects per second over the last ten minutes. Plain HTML that
/// refreshes itself every 5 seconds; no JavaScript.
///
/// ```swift
/// let html = StatusPage(service: service).html
/// ```
struct StatusPage {
    let service: IngestService

    var html: String {
        let uptime = Int(Date().timeIntervalSince1970 - service.startedAt)
        var out = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
            <title>DataIngest server</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:2em;color:#222}
            table{border-collapse:collapse;margin:.5em 0 1.5em}
            td,th{border:1px solid #ccc;padding:.25em .75em;text-align:right}
            th:first-child,td:first-child{text-align:left}
            svg{background:#fafafa;border:1px solid #ddd}
            </style></head><body>
            <h1>DataIngest server</h1>
            <p>Up \(uptime / 3600)h \(uptime / 60 % 60)m \(uptime % 60)s &middot;
            <a href="/metrics">/metrics</a> &middot; <a href="/healthz">/healthz</a></p>

            """
        let metrics = service.metrics
        for app in service.apps {
            let id = app.id
            out += "<h2>App <code>\(escape(id))</code></h2>\n"
            out += "<p>Sink <code>\(escape(app.sink.description))</code>"
            out += app.configuration.developmentMode ? " &middot; development mode" : ""
            out += " &middot; upload URL <code>/api/client/v2.0/app/\(escape(id))/ingest</code></p>\n"
            out += "<table><tr><th>since start-up</th><th>objects</th></tr>\n"
            for outcome in ["accepted", "duplicate", "rejected"] {
                out += "<tr><td>\(outcome)</td><td>\(Int(metrics.objects.value([id, outcome])))</td></tr>\n"
            }
            out += "<tr><td>segments replayed</td><td>\(Int(metrics.replays.value([id])))</td></tr></table>\n"
            out += "<table><tr><th>collection</th><th>rows</th></tr>\n"
            for (collection, count) in app.sink.collectionCounts() {
                out += "<tr><td>\(escape(collection))</td><td>\(count)</td></tr>\n"
            }
            out += "</table>\n"
            out += plot(app.rate.snapshot())
        }
        out += "</body></html>\n"
        return out
    }

    /// A bar chart of objects per second, averaged over 10-second bins.
    func plot(_ perSecond: [UInt64]) -> String {
        let bin = 10
        let bins = stride(from: 0, to: perSecond.count, by: bin).map { start -> Double in
            let slice = perSecond[start..<min(start + bin, perSecond.count)]
            return Double(slice.reduce(0, +)) / Double(slice.count)
        }
        let width = 600.0, height = 120.0
        let peak = max(bins.max() ?? 0, 1)
        let barWidth = width / Double(max(bins.count, 1))
        var out = "<p>Accepted objects per second, last \(perSecond.count / 60) minutes (peak \(Int(peak.rounded())))</p>\n"
        out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
        out += "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"ingest rate\">\n"
        for (index, value) in bins.enumerated() where value > 0 {
            let barHeight = max(1, value / peak * (height - 10))
            out += String(format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#3b7dd8\"/>\n",
                          Double(index) * barWidth, height - barHeight, max(1, barWidth - 1), barHeight)
        }
        out += "</svg>\n"
        return out
    }

    func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
