import Foundation
import IngestCore
import IngestSupport

/// A small Prometheus registry: counters and histograms with labels,
/// rendered in the text exposition format (version 0.0.4) at `/metrics`.
///
/// ```swift
/// let registry = MetricsRegistry()
/// let uploads = registry.counter("ingest_uploads_total", help: "Uploads by app and status.", labels: ["app", "status"])
/// uploads.increment(["weather", "200"])
/// let latency = registry.histogram("ingest_sink_write_seconds", help: "…", labels: ["app"])
/// latency.observe(0.004, ["weather"])
/// print(registry.render())
/// ```
// @unchecked Sendable: the metric list is guarded by `lock`; each metric
// guards its own values.
package final class MetricsRegistry: @unchecked Sendable {
    private let lock = Lock()
    private var metrics: [any RenderableMetric] = []

    /// Creates an empty registry.
    package init() {}

    /// Registers a counter (a value that only goes up).
    package func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        let counter = Counter(name: name, help: help, labelNames: labels)
        lock.withLock { metrics.append(counter) }
        return counter
    }

    /// Registers a gauge whose value is read when rendering.
    package func gauge(
        _ name: String, help: String, labels: [String] = [],
        read: @escaping @Sendable () -> [(labels: [String], value: Double)]
    ) {
        let gauge = Gauge(name: name, help: help, labelNames: labels, read: read)
        lock.withLock { metrics.append(gauge) }
    }

    /// Registers a histogram with cumulative buckets (upper bounds in seconds by default).
    package func histogram(
        _ name: String, help: String, labels: [String] = [],
        buckets: [Double] = Histogram.defaultBuckets
    ) -> Histogram {
        let histogram = Histogram(name: name, help: help, labelNames: labels, buckets: buckets)
        lock.withLock { metrics.append(histogram) }
        return histogram
    }

    /// All metrics in the Prometheus text format.
    package func render() -> String {
        var out = ""
        for metric in lock.withLock({ metrics }) { metric.render(into: &out) }
        return out
    }
}

protocol RenderableMetric: Sendable {
    func render(into out: inout String)
}

/// Formats `{a="x",b="y"}` with Prometheus escaping (backslash, quote, newline).
func prometheusLabels(_ names: [String], _ values: [String], extra: (String, String)? = nil) -> String {
    var pairs = zip(names, values).map { ($0, $1) }
    if let extra { pairs.append(extra) }
    guard !pairs.isEmpty else { return "" }
    return "{"
        + pairs.map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(name)=\"\(escaped)\""
        }.joined(separator: ",") + "}"
}

func prometheusNumber(_ value: Double) -> String {
    if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return String(value)
}

/// A monotonically increasing count per label set.
package final class Counter: RenderableMetric, Sendable {
    let name: String
    let help: String
    let labelNames: [String]
    private let values = LockedBox<[[String]: Double]>([:])

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
    }

    /// Adds `amount` (default 1) to the series with these label values.
    package func increment(_ labels: [String] = [], by amount: Double = 1) {
        values.withLock { $0[labels, default: 0] += amount }
    }

    /// The current value of one series (0 if never incremented).
    package func value(_ labels: [String] = []) -> Double {
        values.withLock { $0[labels] ?? 0 }
    }

    /// Exports the series with these label values at 0 until its first
    /// increment (Prometheus convention for label sets known in advance:
    /// rates and alerts work before the first event).
    package func touch(_ labels: [String] = []) {
        values.withLock { $0[labels, default: 0] += 0 }
    }

    func render(into out: inout String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        for (labels, value) in values.withLock({ $0 }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            out += "\(name)\(prometheusLabels(labelNames, labels)) \(prometheusNumber(value))\n"
        }
    }
}

/// A value read when `/metrics` is rendered (e.g. rows per collection).
final class Gauge: RenderableMetric, Sendable {
    let name: String
    let help: String
    let labelNames: [String]
    let read: @Sendable () -> [(labels: [String], value: Double)]

    init(name: String, help: String, labelNames: [String], read: @escaping @Sendable () -> [(labels: [String], value: Double)]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.read = read
    }

    func render(into out: inout String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
        for sample in read() {
            out += "\(name)\(prometheusLabels(labelNames, sample.labels)) \(prometheusNumber(sample.value))\n"
        }
    }
}

/// Observations counted in cumulative buckets, with their sum and count.
package final class Histogram: RenderableMetric, Sendable {
    /// Seconds from 0.5 ms to 10 s.
    package static let defaultBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Series {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    let name: String
    let help: String
    let labelNames: [String]
    let buckets: [Double]
    private let series = LockedBox<[[String]: Series]>([:])

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets.sorted()
    }

    /// Records one observation in the series with these label values.
    package func observe(_ value: Double, _ labels: [String] = []) {
        let bucket = buckets.firstIndex { value <= $0 } ?? buckets.count
        let size = buckets.count + 1
        series.withLock {
            $0[labels, default: Series(counts: [UInt64](repeating: 0, count: size))].counts[bucket] += 1
            $0[labels]!.sum += value
            $0[labels]!.count += 1
        }
    }

    /// Exports the series with these label values (every bucket 0) until
    /// its first observation.
    package func touch(_ labels: [String] = []) {
        let size = buckets.count + 1
        series.withLock { if $0[labels] == nil { $0[labels] = Series(counts: [UInt64](repeating: 0, count: size)) } }
    }

    /// The number of observations of one series.
    package func count(_ labels: [String] = []) -> UInt64 {
        series.withLock { $0[labels]?.count ?? 0 }
    }

    func render(into out: inout String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for (labels, data) in series.withLock({ $0 }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            var cumulative: UInt64 = 0
            for (index, bound) in (buckets + [Double.infinity]).enumerated() {
                cumulative += data.counts[index]
                out += "\(name)_bucket\(prometheusLabels(labelNames, labels, extra: ("le", prometheusNumber(bound)))) \(cumulative)\n"
            }
            out += "\(name)_sum\(prometheusLabels(labelNames, labels)) \(data.sum)\n"
            out += "\(name)_count\(prometheusLabels(labelNames, labels)) \(data.count)\n"
        }
    }
}
