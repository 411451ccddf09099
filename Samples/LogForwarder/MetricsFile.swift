import CoreMetrics
import Foundation
import IngestSupport

/// A swift-metrics backend that writes every metric, in the Prometheus text
/// format, to a file (`--metrics-file`): replaced atomically (written
/// beside it, then renamed) once a second and at exit. node_exporter's
/// textfile collector reads such a file (a `.prom` in its
/// `--collector.textfile.directory`), and so can anything else. The SDK's
/// store and session metrics (Docs/ClientMetrics.md) and the forwarder's
/// own (`ingest_forward_*`) are in it.
final class MetricsFile: MetricsFactory, Sendable {
    let path: String
    private let values = LockedBox<[Key: Double]>([:])

    struct Key: Hashable, Comparable {
        var name: String
        var labels: String
        var kind: String
        static func < (a: Key, b: Key) -> Bool { (a.name, a.labels) < (b.name, b.labels) }
    }

    init(path: String) { self.path = path }

    private func key(_ label: String, _ dimensions: [(String, String)], _ kind: String) -> Key {
        let labels = dimensions.map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(name)=\"\(escaped)\""
        }.joined(separator: ",")
        return Key(name: label, labels: labels, kind: kind)
    }

    fileprivate func add(_ key: Key, _ amount: Double) { values.withLock { $0[key, default: 0] += amount } }
    fileprivate func set(_ key: Key, _ value: Double) { values.withLock { $0[key] = value } }

    /// A counter (`_total`), a gauge, or a timer (its count and sum in seconds).
    final class Handler: CounterHandler, RecorderHandler, TimerHandler, Sendable {
        let file: MetricsFile
        let key: Key
        init(_ file: MetricsFile, _ key: Key) {
            self.file = file
            self.key = key
            if key.kind == "timer" {
                file.add(Key(name: key.name + "_count", labels: key.labels, kind: "summary"), 0)
            } else {
                file.add(key, 0)
            }
        }
        func increment(by amount: Int64) { file.add(key, Double(amount)) }
        func reset() { file.set(key, 0) }
        func record(_ value: Int64) { file.set(key, Double(value)) }
        func record(_ value: Double) { file.set(key, value) }
        func recordNanoseconds(_ duration: Int64) {
            file.add(Key(name: key.name + "_count", labels: key.labels, kind: "summary"), 1)
            file.add(Key(name: key.name + "_sum", labels: key.labels, kind: "summary"), Double(duration) / 1e9)
        }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        Handler(self, key(label, dimensions, "counter"))
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        Handler(self, key(label, dimensions, "gauge"))
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        Handler(self, key(label, dimensions, "timer"))
    }
    func destroyCounter(_ handler: CounterHandler) {}
    func destroyRecorder(_ handler: RecorderHandler) {}
    func destroyTimer(_ handler: TimerHandler) {}

    /// The Prometheus text of every metric, sorted by name.
    func text() -> String {
        let snapshot = values.withLock { $0 }
        var out = ""
        var typed: Set<String> = []
        for (key, value) in snapshot.sorted(by: { $0.key < $1.key }) {
            let family = key.kind == "summary" ? String(key.name.dropLast(key.name.hasSuffix("_sum") ? 4 : 6)) : key.name
            if typed.insert(family).inserted { out += "# TYPE \(family) \(key.kind == "summary" ? "summary" : key.kind)\n" }
            let number = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
            out += key.labels.isEmpty ? "\(key.name) \(number)\n" : "\(key.name){\(key.labels)} \(number)\n"
        }
        return out
    }

    /// Writes the file (beside it, then renamed over it: a reader never sees half of it).
    func write() {
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text().utf8)) else { return }
        _ = rename(temporary, path)
    }
}
