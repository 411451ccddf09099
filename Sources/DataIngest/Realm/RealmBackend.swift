import IngestCore

/// Where a realm's write transactions go, decided once when it opens and
/// held by the realm for its lifetime.
///
/// | case | opened from | a commit goes to |
/// | --- | --- | --- |
/// | ``synced(_:)`` | a configuration with a ``SyncConfiguration`` | its ``SyncTarget``: the user's segment store, or a custom ``TransactionSink`` |
/// | ``local(_:)`` | a configuration without one | the realm's ``LocalRealmStore`` (SQLite), opened (and migrated) at open |
enum RealmBackend {
    case synced(SyncTarget)
    case local(LocalRealmStore)

    /// The local store, for a local realm.
    var localStore: LocalRealmStore? {
        if case .local(let store) = self { return store }
        return nil
    }
}

/// What a synced configuration commits to.
enum SyncTarget: Sendable {
    /// The user's segment store, through the user's sync session
    /// (`user.flexibleSyncConfiguration()`).
    case session(SessionTransactionSink)
    /// A sink set on ``SyncConfiguration/transactionSink`` by the app (or a
    /// test), which does its own storage.
    case custom(any TransactionSink)

    /// The sink a commit is handed to.
    var sink: any TransactionSink {
        switch self {
        case .session(let sink): return sink
        case .custom(let sink): return sink
        }
    }

    /// The sync session uploading the store, for ``session(_:)``; `nil` for
    /// a custom sink or once the user is gone.
    var session: SyncSession? {
        if case .session(let sink) = self { return sink.session }
        return nil
    }
}
