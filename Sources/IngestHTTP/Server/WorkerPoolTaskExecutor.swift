/// Runs the jobs of async handlers on the server's own worker threads.
///
/// Without it, async handlers would run on Swift's shared concurrency pool,
/// which is as wide as the machine has cores: a process whose other code
/// blocks those threads (a 2-core machine with two blocking calls in flight)
/// would stall every async handler until one returned.
// @unchecked Sendable: `pool` is itself thread-safe and never reassigned.
final class WorkerPoolTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let pool: WorkerPool

    init(pool: WorkerPool) { self.pool = pool }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { job.runSynchronously(on: executor) }
    }
}
