import IngestCore

extension Realm {
    /// The sync session uploading this realm's objects, for a realm opened
    /// from `user.flexibleSyncConfiguration()`; `nil` for a local realm.
    ///
    /// ```swift
    /// try await realm.syncSession?.wait(for: .upload)
    /// ```
    public var syncSession: SyncSession? {
        (configuration.syncConfiguration?.transactionSink as? SessionTransactionSink)?.session
    }
}
