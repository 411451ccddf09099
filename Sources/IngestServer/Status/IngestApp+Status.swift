extension IngestApp {
    /// The rows the app's sink holds per collection and when they were
    /// counted (milliseconds since 1970): read now from a sink that keeps
    /// its counts in memory (SQLite), otherwise as ``SinkMonitor`` last
    /// counted them (every few seconds); nil before the first count.
    package var rowCounts: IngestActivity.RowCounts? {
        if sink.countsAreInMemory, let counts = try? sink.collectionCounts() {
            return IngestActivity.RowCounts(counts: counts, at: activity.now())
        }
        return activity.rowCounts
    }
}
