import Dispatch

/// Runs the sync sessions' tasks (the upload loops, token refreshes) on a
/// dispatch queue of their own, so an app that blocks the threads of Swift's
/// concurrency pool (synchronous waits in async code) cannot stall uploads.
// @unchecked Sendable: only the immutable queue.
final class SyncExecutor: TaskExecutor, @unchecked Sendable {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
