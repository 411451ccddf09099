#if canImport(Glibc)
import Glibc
#endif
import IngestSupport

/// Ingest lags (segment creation to stored, in milliseconds) over the last
/// minutes: the median and the worst, in fixed memory whatever the traffic.
///
/// Time is cut into slots (10 s by default); each keeps the exact maximum
/// and a sparse histogram of its lags in buckets a quarter of a binary order
/// of magnitude wide (2^¼ ≈ 1.19), so the median is reported within ±9 %
/// and the worst exactly.
///
/// ```swift
/// let lags = LagHistory()
/// lags.record(milliseconds: 1_250)
/// let summary = lags.summary(overSeconds: 600)   // (median: ~1250, worst: 1250, count: 1)
/// ```
package final class LagHistory: Sendable {
    struct Slot {
        /// The slot's first second (since 1970); -1 when unused.
        var start: Int64 = -1
        var buckets: [UInt8: UInt32] = [:]
        var worst: Int64 = 0
        var count = 0
    }

    /// What ``summary(overSeconds:)`` reports.
    package struct Summary: Sendable, Equatable {
        /// The median lag in milliseconds (the middle of its bucket, at most ``worst``).
        package var median: Int64
        /// The largest lag in milliseconds.
        package var worst: Int64
        /// How many lags were recorded in the window.
        package var count: Int
    }

    /// Seconds per slot.
    package let slotSeconds: Int64
    private let slots: LockedBox<[Slot]>
    private let clock: @Sendable () -> Int64

    /// Keeps `windowSeconds` (default 600) in slots of `slotSeconds` (default 10).
    /// - Parameter clock: the current second since 1970 (a seam for tests).
    package init(windowSeconds: Int = 600, slotSeconds: Int = 10, clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }) {
        self.slotSeconds = Int64(max(1, slotSeconds))
        self.clock = clock
        slots = LockedBox(Array(repeating: Slot(), count: max(1, windowSeconds / max(1, slotSeconds))))
    }

    /// Records one lag (negative lags, from a client clock ahead of the server's, count as 0).
    package func record(milliseconds: Int64) {
        let lag = max(0, milliseconds)
        let start = clock() / slotSeconds * slotSeconds
        let bucket = Self.bucket(of: lag)
        slots.withLock { slots in
            let index = Int((start / slotSeconds) % Int64(slots.count))
            if slots[index].start != start { slots[index] = Slot(start: start) }
            slots[index].buckets[bucket, default: 0] += 1
            slots[index].worst = max(slots[index].worst, lag)
            slots[index].count += 1
        }
    }

    /// The median and worst lag of the last `seconds` (whole slots), or nil if none was recorded.
    package func summary(overSeconds seconds: Int) -> Summary? {
        let oldest = clock() / slotSeconds * slotSeconds - Int64(max(0, seconds)) + slotSeconds
        var merged: [UInt8: Int] = [:]
        var worst: Int64 = 0
        var count = 0
        slots.withLock { slots in
            for slot in slots where slot.start >= oldest && slot.count > 0 {
                for (bucket, n) in slot.buckets { merged[bucket, default: 0] += Int(n) }
                worst = max(worst, slot.worst)
                count += slot.count
            }
        }
        guard count > 0 else { return nil }
        var seen = 0
        var median: Int64 = 0
        for bucket in merged.keys.sorted() {
            seen += merged[bucket]!
            if seen * 2 >= count {
                median = Self.middle(of: bucket)
                break
            }
        }
        return Summary(median: min(median, worst), worst: worst, count: count)
    }

    /// The bucket of a lag: ⌊4 · log2(lag + 1)⌋ (0 for 0 ms; 255 holds everything past 2^63 ms).
    static func bucket(of milliseconds: Int64) -> UInt8 {
        UInt8(min(255, Int((4 * log2(Double(milliseconds) + 1)).rounded(.down))))
    }

    /// The geometric middle of a bucket's bounds, in milliseconds.
    static func middle(of bucket: UInt8) -> Int64 {
        Int64((pow(2, (Double(bucket) + 0.5) / 4) - 1).rounded())
    }
}
