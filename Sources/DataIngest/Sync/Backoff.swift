import Foundation

/// Exponential backoff with jitter: each delay doubles from `initial` up to
/// `maximum`, and a random half of it is kept ("equal jitter") so that many
/// clients do not retry in step.
///
/// ```swift
/// var backoff = Backoff(initial: 0.5, maximum: 60, clock: SystemSyncClock())
/// let delay = backoff.next()   // 0.25...0.5, then 0.5...1, 1...2, …
/// ```
struct Backoff: Sendable {
    var initial: Double
    var maximum: Double
    private(set) var attempt = 0
    /// Gives the jitter (``SyncClock/random(in:)``).
    let clock: any SyncClock

    init(initial: Double, maximum: Double, clock: any SyncClock = SystemSyncClock()) {
        self.initial = max(initial, 0.001)
        self.maximum = max(maximum, self.initial)
        self.clock = clock
    }

    /// The next delay in seconds.
    mutating func next() -> Double {
        let ceiling = min(maximum, initial * pow(2, Double(min(attempt, 40))))
        attempt += 1
        return ceiling / 2 + clock.random(in: 0...(ceiling / 2))
    }

    /// The delay for a `Retry-After` of `seconds`: at least that, plus up to 10 % jitter.
    mutating func retryAfter(_ seconds: Double) -> Double {
        attempt += 1
        let base = max(0, seconds)
        return base + clock.random(in: 0...max(base * 0.1, 0.01))
    }

    mutating func reset() { attempt = 0 }
}
