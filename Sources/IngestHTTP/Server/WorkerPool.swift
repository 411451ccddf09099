import Foundation
import IngestSupport

/// A fixed set of threads that run submitted jobs in FIFO order, so blocking
/// handlers never run on the event loop.
// @unchecked Sendable: `jobs`, `head`, `stopping` and `running` are only
// touched with `monitor` held.
final class WorkerPool: @unchecked Sendable {
    /// What a thread of the pool waits for.
    private enum Wake: Int, CaseIterable {
        /// A queued job, or stopping (the workers).
        case job
        /// A worker exited (``stop(timeout:)``).
        case exited
    }
    private let monitor = ConditionLock<Wake>()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var stopping = false
    private var running = 0

    init(threads: Int, name: String) {
        let count = max(1, threads)
        running = count
        for i in 0..<count {
            let thread = Thread { [self] in self.work() }
            thread.name = "\(name)-\(i)"
            thread.start()
        }
    }

    /// Queues `job` to run on a worker thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        monitor.withLock {
            jobs.append(job)
            monitor.signal(.job)
        }
    }

    /// Drops queued jobs, lets running jobs finish and waits up to `timeout`
    /// seconds for the threads to exit. Returns whether they all did.
    @discardableResult
    func stop(timeout: Double) -> Bool {
        monitor.withLock {
            stopping = true
            jobs.removeAll()
            head = 0
            monitor.broadcast(.job)
            let deadline = ConditionLock<Wake>.deadline(after: timeout)
            while running > 0 {
                if !monitor.wait(.exited, until: deadline) { break }
            }
            return running == 0
        }
    }

    private func work() {
        while true {
            monitor.lock()
            while head == jobs.count && !stopping {
                monitor.wait(.job)
            }
            if stopping {
                running -= 1
                monitor.broadcast(.exited)
                monitor.unlock()
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
            monitor.unlock()
            job()
        }
    }
}
