#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with a condition variable on the monotonic clock: the
/// store's one lock, used for group commit and for waking its threads.
/// (IngestCore's `Lock` has no condition variable.)
// @unchecked Sendable: the pthread objects are used only through their functions.
final class StoreMonitor: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a broadcast (the caller holds the lock).
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a broadcast or until `deadline` (monotonic nanoseconds).
    /// Returns `false` when the deadline passed.
    @discardableResult
    func wait(until deadline: UInt64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// Wakes every waiter.
    func broadcast() { pthread_cond_broadcast(condition) }

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
