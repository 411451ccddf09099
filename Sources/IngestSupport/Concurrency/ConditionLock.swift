#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pthread_mutex` with one condition variable per case of `Condition`,
/// timed waits on the monotonic clock: the project's one monitor, for a
/// thread that waits for work or for progress (the segment store, the log
/// writer, the HTTP server's worker pool).
///
/// Separate conditions let a thread wake only the waiters concerned (a
/// commit need not wake the sealer). A signal or broadcast of a condition
/// nobody waits on costs nothing: waiters are counted under the mutex.
///
/// ```swift
/// enum Wake: Int, CaseIterable { case work, progress }
/// let monitor = ConditionLock<Wake>()
/// monitor.withLock { queue.append(job); monitor.signal(.work) }
/// monitor.lock()
/// while queue.isEmpty { monitor.wait(.work) }
/// monitor.unlock()
/// ```
// @unchecked Sendable: the pthread objects are used only through their
// functions, and the waiter counts only under the mutex.
package final class ConditionLock<Condition: RawRepresentable & CaseIterable>: @unchecked Sendable
where Condition.RawValue == Int {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let conditions: UnsafeMutablePointer<pthread_cond_t>
    @usableFromInline let waiters: UnsafeMutablePointer<Int>
    private let count: Int

    package init() {
        count = Condition.allCases.map(\.rawValue).max().map { $0 + 1 } ?? 0
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        conditions = .allocate(capacity: count)
        conditions.initialize(repeating: pthread_cond_t(), count: count)
        waiters = .allocate(capacity: count)
        waiters.initialize(repeating: 0, count: count)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        for i in 0..<count { pthread_cond_init(conditions + i, &attributes) }
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        for i in 0..<count { pthread_cond_destroy(conditions + i) }
        pthread_mutex_destroy(mutex)
        conditions.deallocate()
        waiters.deallocate()
        mutex.deallocate()
    }

    @inlinable package func lock() { pthread_mutex_lock(mutex) }
    @inlinable package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` while holding the lock.
    @inlinable
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits for a signal or broadcast of `condition` (the caller holds the
    /// lock; wake-ups can be spurious, so wait in a loop on the state).
    package func wait(_ condition: Condition) {
        waiters[condition.rawValue] += 1
        pthread_cond_wait(conditions + condition.rawValue, mutex)
        waiters[condition.rawValue] -= 1
    }

    /// Waits for a signal or broadcast of `condition` or until `deadline`
    /// (monotonic nanoseconds, see ``now()``). Returns `false` when the
    /// deadline passed.
    @discardableResult
    package func wait(_ condition: Condition, until deadline: UInt64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        waiters[condition.rawValue] += 1
        let rc = pthread_cond_timedwait(conditions + condition.rawValue, mutex, &time)
        waiters[condition.rawValue] -= 1
        return rc != ETIMEDOUT
    }

    /// Wakes one waiter of `condition` (the caller holds the lock).
    @inlinable
    package func signal(_ condition: Condition) {
        guard waiters[condition.rawValue] > 0 else { return }
        pthread_cond_signal(conditions + condition.rawValue)
    }

    /// Wakes every waiter of `condition` (the caller holds the lock).
    @inlinable
    package func broadcast(_ condition: Condition) {
        guard waiters[condition.rawValue] > 0 else { return }
        pthread_cond_broadcast(conditions + condition.rawValue)
    }

    /// Wakes every waiter of every condition (the caller holds the lock).
    package func broadcastAll() {
        for condition in Condition.allCases { broadcast(condition) }
    }

    /// Monotonic time in nanoseconds, the clock of ``wait(_:until:)``.
    package static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The monotonic deadline `seconds` from now (``now()`` plus the
    /// seconds; a negative or NaN interval is now, an infinite one far away).
    package static func deadline(after seconds: Double) -> UInt64 {
        guard seconds > 0 else { return now() }
        let nanoseconds = seconds * 1e9
        guard nanoseconds < Double(UInt64.max / 2) else { return UInt64.max / 2 }
        return now() + UInt64(nanoseconds)
    }
}
