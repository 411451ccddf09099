extension SegmentStore {
    /// Passes the counters to the metrics backend, if there is one (the
    /// caller holds the monitor; ``countersSinceOpen``'s observer calls it
    /// after every change). The pending gauges go with them when due (see
    /// ``StoreMetrics``) or when `pendingNow` (at open).
    func reportMetricsLocked(pendingNow: Bool = false) {
        guard let metrics else { return }
        if metrics.report(countersSinceOpen) || pendingNow {
            metrics.recordPending(countersLocked())
        }
    }
}
