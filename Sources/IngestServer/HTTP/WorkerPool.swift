#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A fixed set of threads that run submitted jobs in FIFO order, so blocking
/// handlers never run on the event loop.
// @unchecked Sendable: `jobs`, `head` and `stopping` are only touched with `mutex` held.
final class WorkerPool: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let exited = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var stopping = false
    private var running = 0

    init(threads: Int, name: String) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        pthread_cond_init(exited, nil)
        let count = max(1, threads)
        running = count
        for i in 0..<count {
            let thread = Thread { [self] in self.work() }
            thread.name = "\(name)-\(i)"
            thread.start()
        }
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_cond_destroy(exited)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        exited.deallocate()
        mutex.deallocate()
    }

    /// Queues `job` to run on a worker thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Drops queued jobs, lets running jobs finish and waits up to `timeout`
    /// seconds for the threads to exit. Returns whether they all did.
    @discardableResult
    func stop(timeout: Double) -> Bool {
        pthread_mutex_lock(mutex)
        stopping = true
        jobs.removeAll()
        head = 0
        pthread_cond_broadcast(condition)
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanos = Int(deadline.tv_nsec) + Int(max(0, timeout) * 1e9)
        deadline.tv_sec += nanos / 1_000_000_000
        deadline.tv_nsec = nanos % 1_000_000_000
        while running > 0 {
            if pthread_cond_timedwait(exited, mutex, &deadline) == ETIMEDOUT { break }
        }
        let done = running == 0
        pthread_mutex_unlock(mutex)
        return done
    }

    private func work() {
        while true {
            pthread_mutex_lock(mutex)
            while head == jobs.count && !stopping {
                pthread_cond_wait(condition, mutex)
            }
            if stopping {
                running -= 1
                pthread_cond_broadcast(exited)
                pthread_mutex_unlock(mutex)
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 {
                jobs.removeFirst(head)
                head = 0
            }
            pthread_mutex_unlock(mutex)
            job()
        }
    }
}
