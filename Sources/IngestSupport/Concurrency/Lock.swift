#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutual-exclusion lock built on `pthread_mutex_t`.
///
/// The project uses this instead of `Synchronization.Mutex` because, with the
/// Swift toolchain on Linux, ThreadSanitizer does not see `Mutex` and reports
/// false races, while a pthread mutex is understood by TSan and costs about
/// the same uncontended. Keep a `Lock` inside a class, never as a global: a
/// global lock in `main.swift` is several times slower.
///
/// ```swift
/// let lock = Lock()
/// lock.withLock { counter += 1 }
/// ```
package final class Lock: @unchecked Sendable {
    // The mutex lives in its own allocation: pthread requires a stable address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable
    package func lock() { pthread_mutex_lock(mutexPointer) }

    @inlinable
    package func unlock() { pthread_mutex_unlock(mutexPointer) }

    @usableFromInline
    var mutexPointer: UnsafeMutablePointer<pthread_mutex_t> { mutex }

    /// Runs `body` while holding the lock.
    @inlinable
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value protected by a ``Lock``: the project's one way to share mutable
/// state between threads on hot paths.
///
/// ```swift
/// let counts = LockedBox([String: Int]())
/// counts.withLock { $0["sensor", default: 0] += 1 }
/// ```
// @unchecked: every access to `value` goes through `lock`.
package final class LockedBox<Value>: @unchecked Sendable {
    @usableFromInline let lock = Lock()
    @usableFromInline var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
