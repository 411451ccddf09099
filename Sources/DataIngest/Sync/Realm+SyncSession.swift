import IngestCore

extension Realm {
    /// The sync session uploading this realm's objects, for a realm opened
    /// from `user.flexibleSyncConfiguration()`; `nil` for a local realm.
    ///
    /// ```swift
    /// try await realm.syncSession?.wait(for: .upload)
    /// ```
    public var syncSession: SyncSession? {
        if case .synced(let target) = backend { return target.session }
        return nil
    }
}
