#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Seconds on the monotonic clock, for the bounds of waits in tests.
package func monotonicNow() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// A clock that moves only when the test moves it, and tells the test what
/// waits on it: the code under test asks it for the time and pauses on it;
/// the test waits for the pause it expects (an event, not a sleep), then
/// advances the clock past it.
///
/// ```swift
/// let clock = ManualClock()
/// let delay = try await clock.nextPause(within: 10)   // the code began waiting `delay` seconds
/// clock.advance(by: delay)                      // and goes on at once
/// ```
package final class ManualClock: @unchecked Sendable {  // state under `lock`
    private let lock = NSLock()

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private var seconds: Double
    private var pauses: [Double] = []
    private var pausesTaken = 0

    /// A clock at `start` seconds (as a date: seconds since 1970).
    package init(start: Double = 1_800_000_000) { seconds = start }

    /// Convenience for a start given as a date.
    package convenience init(_ start: Date) { self.init(start: start.timeIntervalSince1970) }

    /// The clock's time in seconds.
    package var now: Double { locked { seconds } }

    /// The clock's time as a date.
    package var date: Date { Date(timeIntervalSince1970: now) }

    /// The clock's time in whole seconds since 1970.
    package var wholeSeconds: Int64 { Int64(now) }

    /// The clock as the `() -> Date` that server services take.
    package var dateFunction: @Sendable () -> Date { { [self] in date } }

    /// Moves the clock forward; pauses whose end it passes return.
    package func advance(by interval: Double) {
        locked { seconds += interval }
    }

    /// A pause of `duration` seconds on this clock: recorded for
    /// ``nextPause(within:)``, over once the clock passed its end or
    /// `interrupted()` is true (both asked every 2 ms of real time; no
    /// thread is blocked meanwhile).
    package func pause(_ duration: Double, interrupted: () -> Bool) async {
        let end = locked { () -> Double in
            pauses.append(duration)
            return seconds + duration
        }
        while !interrupted() && now < end {
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
    }

    /// The length of the next pause the code under test begins (in order,
    /// each once), waiting at most `timeout` seconds of real time for it.
    package func nextPause(within timeout: Double) async throws -> Double {
        let deadline = monotonicNow() + timeout
        while true {
            let next = locked { () -> Double? in
                guard pausesTaken < pauses.count else { return nil }
                defer { pausesTaken += 1 }
                return pauses[pausesTaken]
            }
            if let next { return next }
            guard monotonicNow() < deadline else {
                throw TestSupportError("no pause began on the manual clock within \(timeout) s")
            }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
    }

    /// The pauses begun so far.
    package var pausesBegun: [Double] { locked { pauses } }
}

/// A failure in the tests' own plumbing (setup, a child that does not start).
package struct TestSupportError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
