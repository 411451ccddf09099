#if canImport(Glibc)
import Glibc
#endif
import IngestCore
import IngestSupport

/// Objects accepted per second over the last minutes, in a ring buffer of
/// per-second counts (memory is fixed whatever the traffic).
///
/// ```swift
/// let history = RateHistory(seconds: 600)
/// history.record(250)                    // 250 objects accepted now
/// let perSecond = history.snapshot()     // oldest first, one entry per second
/// ```
package final class RateHistory: Sendable {
    struct State {
        var counts: [UInt64]
        /// The second (since the epoch) `counts[head]` belongs to.
        var headSecond: Int64
        var head: Int
    }

    /// The number of seconds kept.
    package let seconds: Int
    private let state: LockedBox<State>
    private let clock: @Sendable () -> Int64

    /// Creates an empty history of `seconds` seconds (default 600: ten minutes).
    /// - Parameter clock: the current second since 1970 (a seam for tests).
    package init(seconds: Int = 600, clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }) {
        self.seconds = max(2, seconds)
        self.clock = clock
        state = LockedBox(State(counts: [UInt64](repeating: 0, count: max(2, seconds)), headSecond: clock(), head: 0))
    }

    /// Adds `count` to the current second.
    package func record(_ count: Int) {
        let now = clock()
        state.withLock { state in
            advance(&state, to: now)
            state.counts[state.head] += UInt64(max(0, count))
        }
    }

    /// The counts of the last ``seconds`` seconds, oldest first; the last
    /// entry is the current (incomplete) second.
    package func snapshot() -> [UInt64] {
        let now = clock()
        return state.withLock { state in
            advance(&state, to: now)
            let start = (state.head + 1) % seconds
            return Array(state.counts[start...] + state.counts[..<start])
        }
    }

    private func advance(_ state: inout State, to now: Int64) {
        guard now > state.headSecond else { return }
        let steps = Int(min(Int64(seconds), now - state.headSecond))
        for _ in 0..<steps {
            state.head = (state.head + 1) % seconds
            state.counts[state.head] = 0
        }
        state.headSecond = now
    }
}
