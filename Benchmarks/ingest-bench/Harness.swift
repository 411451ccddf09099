#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// One figure: a measured value, and when it has one, the baseline it is
/// compared with, measured in the same run.
struct Figure {
    var group: String
    var name: String
    var value: Double
    var unit: String
    /// The baseline's name and value, in the same unit.
    var baseline: (name: String, value: Double)?
    /// A target from the issues, with the comparison it must satisfy.
    var target: Target?

    enum Target {
        case atMost(Double)
        case atLeast(Double)
        /// The ratio (baseline / value for times, value / baseline for rates) must reach this.
        case ratioAtLeast(Double)
    }

    /// How many times better than the baseline: for times (ns, µs) the
    /// baseline divided by the value, for rates the value divided by the baseline.
    var ratio: Double? {
        guard let baseline, baseline.value > 0, value > 0 else { return nil }
        return unit.hasSuffix("/s") ? value / baseline.value : baseline.value / value
    }

    var meetsTarget: Bool? {
        guard let target else { return nil }
        switch target {
        case .atMost(let limit): return value <= limit
        case .atLeast(let limit): return value >= limit
        case .ratioAtLeast(let limit): return (ratio ?? 0) >= limit
        }
    }

    var targetText: String {
        switch target {
        case .none: return ""
        case .atMost(let limit): return "≤ \(Self.format(limit)) \(unit)"
        case .atLeast(let limit): return "≥ \(Self.format(limit)) \(unit)"
        case .ratioAtLeast(let limit): return "≥ \(Self.format(limit))× baseline"
        }
    }

    static func format(_ value: Double) -> String {
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }
}

/// Monotonic time in nanoseconds.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Measures the median time of one call of `body`, in nanoseconds: runs
/// `rounds` rounds of `iterations` calls each after a warm-up round and
/// returns the median of the per-call averages of the rounds.
func medianNanoseconds(iterations: Int, rounds: Int = 9, _ body: () throws -> Void) rethrows -> Double {
    for _ in 0..<max(1, iterations / 4) { try body() }
    var perCall: [Double] = []
    perCall.reserveCapacity(rounds)
    for _ in 0..<rounds {
        let start = nowNanoseconds()
        for _ in 0..<iterations { try body() }
        perCall.append(Double(nowNanoseconds() - start) / Double(iterations))
    }
    perCall.sort()
    return perCall[perCall.count / 2]
}

/// Keeps a value alive and opaque to the optimizer.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The machine-wide CPU time counters of `/proc/stat`'s `cpu` line, in
/// clock ticks: what a group's figures can be judged against. On a virtual
/// machine, `steal` is time in which this machine's CPUs had work but the
/// hypervisor ran something else: figures from a group with a high share
/// of it are not from an idle machine.
struct MachineCPUTime {
    var steal: UInt64
    /// Every tick but idle and I/O wait: the CPUs running, or waiting for
    /// the hypervisor (steal).
    var busy: UInt64

    /// The counters now, or nil where `/proc/stat` cannot be read (not Linux).
    static func now() -> MachineCPUTime? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is already in user).
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { UInt64($0) }
        guard ticks.count == 8 else { return nil }
        return MachineCPUTime(steal: ticks[7], busy: ticks.reduce(0, +) - ticks[3] - ticks[4])
    }

    /// The percentage of the busy time since `earlier` that was stolen.
    func stealPercent(since earlier: MachineCPUTime) -> Double? {
        guard busy > earlier.busy else { return nil }
        return Double(steal - earlier.steal) * 100 / Double(busy - earlier.busy)
    }
}
