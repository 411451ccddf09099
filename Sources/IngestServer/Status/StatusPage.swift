import Foundation
import IngestCore

/// The HTML status page at `GET /`, for an operator asking whether data is
/// flowing and whether anything is wrong. Per app: the sink and its health,
/// per collection the rows the sink holds (an estimate on large PostgreSQL
/// tables, marked ≈), the accepted objects per second over the last minute
/// and ten minutes, the ingest lag (segment creation to stored; median and
/// worst over ten minutes) and the rejections; the last rejected objects
/// with their reasons; the last uploads (store, user, device, objects,
/// when); a plot of the accepted objects per second with time and value
/// axes. Upload figures are this instance's; row counts are the sink's.
///
/// Rendered on the server, complete without JavaScript (it then reloads
/// every 5 s); a small script shows times as "12 s ago" and refreshes the
/// content in place every 5 s instead.
///
/// ```swift
/// let html = StatusPage(service: service).html
/// ```
struct StatusPage {
    let service: IngestService
    /// Milliseconds since 1970 when the page is rendered.
    var now = Int64((Date().timeIntervalSince1970 * 1000).rounded())

    var html: String {
        let uptime = Int(Date().timeIntervalSince1970 - service.startedAt)
        var out = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <noscript><meta http-equiv="refresh" content="5"></noscript>
            <title>DataIngest server</title>
            <style>\(Self.style)</style></head><body>
            <header><h1>DataIngest server</h1>
            <p>This instance: up \(duration(seconds: uptime)) (started \(time(Int64(service.startedAt * 1000)))) &middot;
            <a href="/metrics">/metrics</a> &middot; <a href="/healthz">/healthz</a></p></header>
            <main data-now="\(now)">

            """
        for app in service.apps { out += section(app) }
        out += "</main>\n<script>\(Self.script)</script>\n</body></html>\n"
        return out
    }

    // MARK: - One app

    func section(_ app: IngestApp) -> String {
        let id = app.id
        let metrics = service.metrics
        let activity = app.activity
        var out = "<section class=\"app\" data-app=\"\(escape(id))\">\n"
        out += "<h2>App <code>\(escape(id))</code>"
        out += app.configuration.developmentMode ? " <span class=\"badge\">development mode</span>" : ""
        out += "</h2>\n"
        out += "<p class=\"sink\">Sink <code>\(escape(app.sink.description))</code> &middot; upload URL "
        out += "<code>\(escape(ProtocolRoutes.uploadPath(appId: id)))</code></p>\n"
        out += health(app)

        // The plot and this instance's totals side by side.
        out += "<div class=\"overview\">\n"
        out += plot(activity.accepted.snapshot())
        out += "<table class=\"totals\"><caption>This instance since start-up</caption>\n"
        for outcome in ["accepted", "duplicate", "rejected"] {
            out += "<tr><th>objects \(outcome)</th><td data-value=\"\(Int(metrics.objects.value([id, outcome])))\">"
            out += "\(grouped(Int(metrics.objects.value([id, outcome]))))</td></tr>\n"
        }
        out += "<tr><th>segments replayed</th><td>\(grouped(Int(metrics.replays.value([id]))))</td></tr>\n"
        out += "</table>\n</div>\n"

        out += collections(app)
        out += rejections(activity.recentRejections, byCode: activity.rejectionsByCode)
        out += uploads(activity.recentUploads)
        out += "</section>\n"
        return out
    }

    func health(_ app: IngestApp) -> String {
        let health = app.activity.sinkHealth
        let counted = app.rowCounts
        var out = "<p class=\"sink-health\" data-health=\"\(health.isHealthy ? "ok" : "failing")\">"
        if let since = health.failingSince {
            out += "<strong class=\"bad\">&#9679; Sink failing</strong> since \(time(since))"
            if let failure = health.lastFailure { out += ": <span class=\"error\">\(escape(failure.message))</span>" }
        } else {
            out += "<strong class=\"good\">&#9679; Sink healthy</strong>"
            if let success = health.lastSuccess { out += " &middot; last success \(time(success))" }
            if let seconds = health.lastWriteSeconds { out += " &middot; last write took \(lag(Int64((seconds * 1000).rounded())))" }
            if let failure = health.lastFailure {
                out += " &middot; last failure \(time(failure.at)): <span class=\"error\">\(escape(failure.message))</span>"
            }
        }
        out += counted.map { " &middot; rows counted \(time($0.at))" } ?? " &middot; rows not counted yet"
        out += "</p>\n"
        return out
    }

    func collections(_ app: IngestApp) -> String {
        let counts = app.rowCounts?.counts ?? []
        let statistics = app.activity.collectionStatistics(also: counts.map(\.collection))
        var out = "<h3>Collections</h3>\n<div class=\"scroll\"><table class=\"collections\">\n"
        out += "<thead><tr><th>collection</th><th>rows in the sink</th><th>objects/s, 1 min</th><th>objects/s, 10 min</th>"
        out += "<th>lag, median</th><th>lag, worst</th><th>rejected, 10 min</th></tr></thead>\n"
        if statistics.isEmpty { out += "<tr><td colspan=\"7\" class=\"none\">No collection yet.</td></tr>\n" }
        for row in statistics {
            let count = counts.first { $0.collection == row.collection }
            out += "<tr data-collection=\"\(escape(row.collection))\""
            out += " data-rate-1m=\"\(decimal(row.acceptedPerSecond1m))\" data-rate-10m=\"\(decimal(row.acceptedPerSecond10m))\""
            if let lag = row.lag { out += " data-lag-median-ms=\"\(lag.median)\" data-lag-worst-ms=\"\(lag.worst)\"" }
            out += " data-rejected-10m=\"\(row.rejected10m)\">"
            out += "<td><code>\(escape(row.collection))</code></td>"
            if let count {
                out += "<td class=\"rows\" data-rows=\"\(count.count)\" data-estimate=\"\(count.isEstimate)\""
                out += count.isEstimate ? " title=\"the database's estimate (a large table is not counted row by row)\">&asymp; " : ">"
                out += "\(grouped(count.count))</td>"
            } else {
                out += "<td class=\"rows none\">&ndash;</td>"
            }
            out += "<td>\(rate(row.acceptedPerSecond1m))</td><td>\(rate(row.acceptedPerSecond10m))</td>"
            out += "<td>\(row.lag.map { lag($0.median) } ?? "&ndash;")</td><td>\(row.lag.map { lag($0.worst) } ?? "&ndash;")</td>"
            out += "<td class=\"\(row.rejected10m > 0 ? "bad" : "")\">\(grouped(row.rejected10m))</td></tr>\n"
        }
        out += "</table></div>\n"
        return out
    }

    func rejections(_ rejections: [IngestActivity.Rejection], byCode: [(code: String, count: Int)]) -> String {
        var out = "<h3>Rejected objects</h3>\n"
        guard !rejections.isEmpty else { return out + "<p class=\"none\">None since start-up.</p>\n" }
        out += "<p class=\"by-code\">Since start-up, by reason code: "
        out += byCode.map { "<code>\(escape($0.code))</code> \(grouped($0.count))" }.joined(separator: " &middot; ")
        out += ". The last \(rejections.count), newest first:</p>\n"
        out += "<div class=\"scroll\"><table class=\"rejections\">\n<thead><tr><th>when</th><th>collection</th><th>code</th>"
        out += "<th>reason</th><th>store / segment / index</th></tr></thead>\n"
        for rejection in rejections {
            out += "<tr><td>\(time(rejection.at))</td><td><code>\(escape(rejection.collection))</code></td>"
            out += "<td class=\"code\"><code>\(escape(rejection.code))</code></td><td class=\"reason\">\(escape(rejection.reason))</td>"
            out += "<td><code>\(escape(rejection.storeId))</code> / \(rejection.segmentNumber) / \(rejection.index)</td></tr>\n"
        }
        out += "</table></div>\n"
        return out
    }

    func uploads(_ uploads: [IngestActivity.Upload]) -> String {
        var out = "<h3>Recent uploads</h3>\n"
        guard !uploads.isEmpty else { return out + "<p class=\"none\">None since start-up.</p>\n" }
        out += "<div class=\"scroll\"><table class=\"uploads\">\n<thead><tr><th>when</th><th>store</th><th class=\"num\">segment</th>"
        out += "<th>user</th><th>device</th><th class=\"num\">objects: accepted / dup. / rejected</th><th class=\"num\">lag</th>"
        out += "<th>answer</th></tr></thead>\n"
        for upload in uploads {
            out += "<tr class=\"upload\"><td>\(time(upload.at))</td>"
            out += "<td class=\"store\"><code>\(upload.storeId.map(escape) ?? "&ndash;")</code></td>"
            out += "<td class=\"num\">\(upload.segmentNumber.map(String.init) ?? "&ndash;")</td>"
            out += "<td class=\"user\"><code>\(upload.userId.map(escape) ?? "&ndash;")</code></td>"
            out += "<td class=\"device\"><code>\(upload.deviceId.map(escape) ?? "&ndash;")</code></td>"
            out +=
                upload.outcome == nil
                ? "<td class=\"objects num\">\(grouped(upload.accepted)) / \(grouped(upload.duplicate)) / \(grouped(upload.rejected))</td>"
                : "<td class=\"objects num none\">&ndash;</td>"
            out += "<td class=\"num\">\(upload.lagMilliseconds.map(lag) ?? "&ndash;")</td>"
            let failed = upload.status >= 400
            out += "<td class=\"\(failed ? "bad" : "")\">\(upload.status)\(upload.outcome.map { " " + escape($0) } ?? "")</td></tr>\n"
        }
        out += "</table></div>\n"
        return out
    }

    // MARK: - The plot

    /// Accepted objects per second, averaged over 10-second bins, with a
    /// time axis (minutes ago) and a value axis (objects per second).
    func plot(_ perSecond: [UInt64]) -> String {
        let bin = 10
        let bins = stride(from: 0, to: perSecond.count, by: bin).map { start -> Double in
            let slice = perSecond[start..<min(start + bin, perSecond.count)]
            return Double(slice.reduce(0, +)) / Double(slice.count)
        }
        let minutes = max(1, perSecond.count / 60)
        let width = 640.0, height = 200.0
        let left = 56.0, right = 12.0, top = 12.0, bottom = 34.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let step = Self.niceStep(max(bins.max() ?? 0, 4) / 4)
        let top_ = max(step, ((bins.max() ?? 0) / step).rounded(.up) * step)
        func y(_ value: Double) -> Double { top + plotHeight - value / top_ * plotHeight }
        var out = "<figure class=\"plot\"><svg class=\"rate-plot\" xmlns=\"http://www.w3.org/2000/svg\" "
        out += "width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" "
        out += "aria-label=\"accepted objects per second over the last \(minutes) minutes\">\n"
        // Value axis: gridlines and labels at nice steps.
        out += "<g class=\"y-axis\">"
        var tick = 0.0
        while tick <= top_ + step / 2 {
            out += "<line x1=\"\(n(left))\" x2=\"\(n(width - right))\" y1=\"\(n(y(tick)))\" y2=\"\(n(y(tick)))\"/>"
            out += "<text x=\"\(n(left - 6))\" y=\"\(n(y(tick) + 4))\" text-anchor=\"end\">\(Self.short(tick))</text>"
            tick += step
        }
        out += "<text class=\"axis-label\" transform=\"translate(14 \(n(top + plotHeight / 2))) rotate(-90)\" "
        out += "text-anchor=\"middle\">objects/s</text>"
        out += "</g>\n"
        // Bars, oldest left.
        let barWidth = plotWidth / Double(max(bins.count, 1))
        out += "<g class=\"bars\">"
        for (index, value) in bins.enumerated() where value > 0 {
            let barHeight = max(1, value / top_ * plotHeight)
            out += "<rect x=\"\(n(left + Double(index) * barWidth))\" y=\"\(n(top + plotHeight - barHeight))\" "
            out += "width=\"\(n(max(1, barWidth - 1)))\" height=\"\(n(barHeight))\"><title>\(Self.short(value)) objects/s</title></rect>"
        }
        out += "</g>\n"
        // Time axis: a tick every 2 minutes (every minute for short windows), "now" at the right.
        out += "<g class=\"x-axis\">"
        out += "<line x1=\"\(n(left))\" x2=\"\(n(width - right))\" y1=\"\(n(top + plotHeight))\" y2=\"\(n(top + plotHeight))\"/>"
        let every = minutes >= 6 ? 2 : 1
        for ago in stride(from: minutes, through: 0, by: -every) {
            let x = left + plotWidth * (1 - Double(ago) / Double(minutes))
            let label = ago == 0 ? "now" : ago == minutes ? "\(ago) min ago" : "\(ago) min"
            out += "<line x1=\"\(n(x))\" x2=\"\(n(x))\" y1=\"\(n(top + plotHeight))\" y2=\"\(n(top + plotHeight + 5))\"/>"
            let anchor = ago == minutes ? "start" : ago == 0 ? "end" : "middle"
            out += "<text x=\"\(n(x))\" y=\"\(n(height - 10))\" text-anchor=\"\(anchor)\">\(label)</text>"
        }
        out += "</g>\n</svg>\n<figcaption>Accepted objects per second on this instance, 10-second averages</figcaption></figure>\n"
        return out
    }

    /// A coordinate with one decimal.
    func n(_ value: Double) -> String { String(format: "%.1f", value) }

    /// 1, 2 or 5 times a power of ten, at least `value`.
    static func niceStep(_ value: Double) -> Double {
        let magnitude = pow(10, (log10(max(value, 1e-9))).rounded(.down))
        for factor in [1.0, 2, 5, 10] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }

    /// `950`, `1.5k`, `12k`, `3.2M`.
    static func short(_ value: Double) -> String {
        switch value {
        case ..<1000: value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
        case ..<10_000: String(format: "%.1fk", value / 1000)
        case ..<1_000_000: String(format: "%.0fk", value / 1000)
        default: String(format: "%.1fM", value / 1_000_000)
        }
    }

    // MARK: - Formatting

    /// A `<time>` the script shows as "12 s ago"; UTC without it.
    func time(_ millis: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(millis) / 1000)
        let iso = ISO8601DateFormatter.string(
            from: date, timeZone: TimeZone(identifier: "UTC")!,
            formatOptions: [.withInternetDateTime])
        let clock = String(iso.dropFirst(11).prefix(8))
        return "<time datetime=\"\(iso)\" data-ms=\"\(millis)\">\(clock) UTC</time>"
    }

    func duration(seconds: Int) -> String {
        if seconds < 3600 { return "\(seconds / 60)m \(seconds % 60)s" }
        if seconds < 86_400 { return "\(seconds / 3600)h \(seconds / 60 % 60)m" }
        return "\(seconds / 86_400)d \(seconds / 3600 % 24)h"
    }

    /// `850 ms`, `3.2 s`, `4.5 min`, `2.0 h`, `3.1 d`.
    func lag(_ millis: Int64) -> String {
        let value = Double(millis)
        switch millis {
        case ..<1000: return "\(millis) ms"
        case ..<60_000: return String(format: "%.1f s", value / 1000)
        case ..<3_600_000: return String(format: "%.1f min", value / 60_000)
        case ..<172_800_000: return String(format: "%.1f h", value / 3_600_000)
        default: return String(format: "%.1f d", value / 86_400_000)
        }
    }

    func rate(_ perSecond: Double) -> String {
        perSecond == 0 ? "0" : perSecond < 10 ? String(format: "%.1f", perSecond) : grouped(Int(perSecond.rounded()))
    }

    func decimal(_ value: Double) -> String { String(format: "%.3f", value) }

    /// `1 234 567` with thin spaces.
    func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "&#8201;" }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
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

    // MARK: - Style and script

    static let style = """
        :root{color-scheme:light dark;--fg:#1d2330;--muted:#667085;--line:#d0d5dd;--bg:#fff;--panel:#f8f9fb;--bar:#3b7dd8;\
        --good:#12805c;--bad:#c4320a}
        @media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#98a2b3;--line:#3a4150;--bg:#14171c;--panel:#1b1f26;\
        --bar:#5b9cf0;--good:#3ccb8f;--bad:#ff7a59}}
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;padding:1.5em 2em;max-width:1240px;\
        color:var(--fg);background:var(--bg)}
        h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.25em;margin:0 0 .3em}h3{font-size:1em;margin:1.4em 0 .4em}
        header p,.sink,figcaption,caption,.none{color:var(--muted)}
        header{border-bottom:1px solid var(--line);margin-bottom:1.2em}
        section.app{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:1em 1.3em;margin:0 0 1.5em}
        code{font:12px ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
        .badge{font-size:.7em;font-weight:600;border:1px solid var(--line);border-radius:1em;padding:.1em .6em;vertical-align:middle}
        .good{color:var(--good)}.bad{color:var(--bad)}.error{color:var(--bad)}
        .overview{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
        figure{margin:0}figcaption{font-size:.85em;margin-top:.2em}
        .scroll{overflow-x:auto}
        table{border-collapse:collapse;font-variant-numeric:tabular-nums}
        caption{text-align:left;font-size:.85em;padding-bottom:.3em}
        th,td{border-bottom:1px solid var(--line);padding:.3em .7em;text-align:right;vertical-align:top}
        thead th{font-weight:600;font-size:.85em;color:var(--muted)}
        th:first-child,td:first-child,.totals th{text-align:left}
        td.reason{text-align:left;min-width:18em;max-width:40em}
        .uploads th,.uploads td,.rejections th,.rejections td{text-align:left;white-space:nowrap}
        .uploads .num{text-align:right}.rejections td.reason{white-space:normal}.by-code{color:var(--muted)}
        svg{background:var(--bg);border:1px solid var(--line);border-radius:4px}
        svg text{font:11px system-ui,sans-serif;fill:var(--muted)}svg .axis-label{font-size:12px}
        svg line{stroke:var(--line);stroke-width:1}svg rect{fill:var(--bar)}
        html[data-stale] main{opacity:.55}
        """

    /// Shows `<time data-ms>` as "12 s ago" (from the server's clock at
    /// rendering, so a skewed browser clock does not matter) and replaces
    /// `<main>` with a fresh copy every 5 s (not while the tab is hidden); if
    /// the server cannot be reached the page is dimmed until it answers again.
    static let script = """
        (function () {
          var root = document.documentElement, loaded = Date.now();
          function ago(ms) {
            var main = document.querySelector("main"), now = +main.dataset.now + (Date.now() - loaded);
            var s = Math.max(0, Math.round((now - ms) / 1000));
            if (s < 120) return s + " s ago";
            if (s < 7200) return Math.round(s / 60) + " min ago";
            if (s < 172800) return Math.round(s / 3600) + " h ago";
            return Math.round(s / 86400) + " d ago";
          }
          function render() {
            var times = document.querySelectorAll("time[data-ms]");
            for (var i = 0; i < times.length; i++) {
              var ms = +times[i].dataset.ms;
              times[i].textContent = ago(ms);
              times[i].title = new Date(ms).toLocaleString();
            }
          }
          function refresh() {
            if (document.hidden) { setTimeout(refresh, 5000); return; }
            fetch(location.pathname, { cache: "no-store" }).then(function (response) {
              if (!response.ok) throw new Error("HTTP " + response.status);
              return response.text();
            }).then(function (text) {
              var next = new DOMParser().parseFromString(text, "text/html").querySelector("main");
              if (next) {
                document.querySelector("main").replaceWith(next);
                loaded = Date.now();
                root.dataset.refreshes = (+root.dataset.refreshes || 0) + 1;
              }
              delete root.dataset.stale;
              render();
            }).catch(function () { root.dataset.stale = ""; }).then(function () { setTimeout(refresh, 5000); });
          }
          render();
          setInterval(render, 1000);
          setTimeout(refresh, 5000);
          root.dataset.script = "ran";
        })();
        """
}
