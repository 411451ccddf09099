import IngestCore
import IngestSupport

/// App-wide sync settings, as the seed SDK's `app.syncManager`: the error
/// handler every session of the app reports to.
///
/// ```swift
/// app.syncManager.errorHandler = { error, session in
///     logger.error("sync: \(error)")
/// }
/// ```
// @unchecked Sendable: the handler is kept in a LockedBox.
public final class SyncManager: @unchecked Sendable {
    /// Receives sync errors: rejected objects (already in quarantine),
    /// rejected segments, invalid sessions, store failures. Called on a
    /// background thread. Default `nil`: errors are only counted and kept
    /// in ``SyncSession/lastError``.
    public var errorHandler: (@Sendable (SyncError, SyncSession?) -> Void)? {
        get { handler.withLock { $0 } }
        set { handler.withLock { $0 = newValue } }
    }

    private let handler = LockedBox<(@Sendable (SyncError, SyncSession?) -> Void)?>(nil)

    init() {}

    func report(_ error: SyncError, session: SyncSession?) {
        handler.withLock { $0 }?(error, session)
    }
}
