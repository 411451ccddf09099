#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with condition variables on the monotonic clock: the
/// store's one lock. Separate conditions keep a commit from waking the
/// background threads: with a single condition every commit's broadcast woke
/// the sealer and the syncer, which then fought for the mutex (measured with
/// `perf`: most of a one-object commit was futex traffic). A broadcast with no
/// waiter registered costs nothing. (IngestCore's `Lock` has no conditions.)
// @unchecked Sendable: the pthread objects are used only through their functions,
// and the waiter counts only under the mutex.
final class StoreMonitor: @unchecked Sendable {
    /// What a thread waits for.
    enum Condition: Int, CaseIterable {
        /// The commit leader finished a group (followers, and `flush` waiting for no leader).
        case leader
        /// Work for the sealer (a rotated segment, or stopping).
        case sealer
        /// Anything else: seals done, space freed, threads stopped, stopping.
        case state
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let conditions: UnsafeMutablePointer<pthread_cond_t>
    private var waiters = [Int](repeating: 0, count: Condition.allCases.count)

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        let count = Condition.allCases.count
        conditions = .allocate(capacity: count)
        conditions.initialize(repeating: pthread_cond_t(), count: count)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        for i in 0..<count { pthread_cond_init(conditions + i, &attributes) }
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        for i in 0..<Condition.allCases.count { pthread_cond_destroy(conditions + i) }
        pthread_mutex_destroy(mutex)
        conditions.deallocate()
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a broadcast of `condition` (the caller holds the lock).
    func wait(_ condition: Condition) {
        waiters[condition.rawValue] += 1
        pthread_cond_wait(conditions + condition.rawValue, mutex)
        waiters[condition.rawValue] -= 1
    }

    /// Waits for a broadcast of `condition` or until `deadline` (monotonic
    /// nanoseconds). Returns `false` when the deadline passed.
    @discardableResult
    func wait(_ condition: Condition, until deadline: UInt64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        waiters[condition.rawValue] += 1
        let rc = pthread_cond_timedwait(conditions + condition.rawValue, mutex, &time)
        waiters[condition.rawValue] -= 1
        return rc != ETIMEDOUT
    }

    /// Wakes every waiter of `condition` (the caller holds the lock).
    @inline(__always)
    func broadcast(_ condition: Condition) {
        guard waiters[condition.rawValue] > 0 else { return }
        pthread_cond_broadcast(conditions + condition.rawValue)
    }

    /// Wakes every waiter of every condition (the caller holds the lock).
    func broadcastAll() {
        for condition in Condition.allCases { broadcast(condition) }
    }

    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Monotonic time in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
