#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport
import Logging

/// Refreshes, every few seconds on a thread of its own, what each app's
/// sink holds: the row counts `ingest_collection_rows` and the status page
/// report (``Sink/collectionCounts()``, cheap whatever the table sizes), the
/// sink's health, and in development mode on shared state the schema other
/// instances learned (``IngestApp/adoptSharedSchema()``). Requests only read
/// the last results, so a slow or unreachable database never holds up
/// `/metrics` or the status page.
///
/// ```swift
/// let monitor = SinkMonitor(apps: apps, interval: 5)
/// monitor.refresh()       // once, before the server accepts requests
/// monitor.start()
/// monitor.stop()          // at shutdown
/// ```
package final class SinkMonitor: Sendable {
    enum Wake: Int, CaseIterable { case stop }

    /// The apps refreshed.
    package let apps: [IngestApp]
    /// Seconds between refreshes.
    package let interval: Double
    private let monitor = ConditionLock<Wake>()
    private let stopped = LockedBox(false)
    private let thread = LockedBox<Thread?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    private let logger: Logger

    /// Creates the monitor (nothing runs until ``start()``); what it cannot
    /// read is logged to `logger` as a warning.
    package init(apps: [IngestApp], interval: Double = 5, logger: Logger = Logger(label: "ingest-server")) {
        self.apps = apps
        self.interval = max(0.05, interval)
        self.logger = logger
    }

    /// Refreshes every app once, on the calling thread.
    package func refresh() {
        for app in apps {
            do throws(SinkError) {
                try app.adoptSharedSchema(logger: logger)
            } catch {
                logger.warning("app \(app.id): cannot read the shared development schema: \(error)", metadata: ["app": "\(app.id)"])
            }
            do throws(SinkError) {
                app.activity.recordRowCounts(try app.sink.collectionCounts())
            } catch {
                app.activity.recordRowCountFailure(error.message)
            }
        }
    }

    /// Starts refreshing every ``interval`` seconds.
    package func start() {
        let thread = Thread { [self] in
            while true {
                let stop = monitor.withLock { () -> Bool in
                    let deadline = ConditionLock<Wake>.deadline(after: interval)
                    while !stopped.withLock({ $0 }) {
                        if !monitor.wait(.stop, until: deadline) { break }
                    }
                    return stopped.withLock { $0 }
                }
                if stop { break }
                refresh()
            }
            finished.signal()
        }
        thread.name = "dataingest.sink-monitor"
        self.thread.withLock { $0 = thread }
        thread.start()
    }

    /// Stops the thread and waits for a refresh in progress to end (idempotent).
    package func stop() {
        let running = thread.withLock { thread -> Bool in
            defer { thread = nil }
            return thread != nil
        }
        monitor.withLock {
            stopped.withLock { $0 = true }
            monitor.broadcast(.stop)
        }
        if running { finished.wait() }
    }
}
