import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the sync session takes time and randomness from: retry delays and
/// their jitter, the deadline of ``SyncSession/wait(for:timeout:)``, access
/// token expiry. A seam, so that tests drive retries and expiry by events
/// (a manual clock the test advances) instead of sleeping;
/// ``SystemSyncClock`` is the real one.
///
/// ```swift
/// var configuration = App.Configuration(baseURL: url)
/// configuration.sync.clock = manualClock   // tests only: package access
/// ```
package protocol SyncClock: Sendable {
    /// Seconds on a monotonic clock.
    func now() -> Double
    /// Seconds since 1970 (token expiry is wall-clock time).
    func wallTime() -> Double
    /// A random number in `range` (the jitter of retry delays).
    func random(in range: ClosedRange<Double>) -> Double
    /// Waits `seconds` on this clock, returning early once `interrupted()`
    /// is true (asked at least every 50 ms of real time).
    func pause(_ seconds: Double, interrupted: @Sendable () -> Bool) async
}

/// The real clock: `CLOCK_MONOTONIC`, `Date`, the system's random numbers,
/// `Task.sleep` in steps of at most 50 ms.
package struct SystemSyncClock: SyncClock {
    package init() {}

    package func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    package func wallTime() -> Double { Date().timeIntervalSince1970 }

    package func random(in range: ClosedRange<Double>) -> Double { Double.random(in: range) }

    package func pause(_ seconds: Double, interrupted: @Sendable () -> Bool) async {
        let deadline = now() + seconds
        while true {
            let remaining = deadline - now()
            guard remaining > 0 else { return }
            try? await Task.sleep(nanoseconds: UInt64(max(0.001, min(remaining, 0.05)) * 1e9))
            if interrupted() { return }
        }
    }
}
