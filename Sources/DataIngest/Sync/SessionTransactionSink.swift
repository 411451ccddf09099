import IngestCore

/// The glue between a synced `Realm` and the user's segment store: each
/// committed write transaction is appended to the store as one unit (all
/// records or none) before `write {}` returns.
// @unchecked Sendable: holds only a weak reference, set once by the session's
// init before the session is shared; the session is thread-safe.
final class SessionTransactionSink: TransactionSink, @unchecked Sendable {
    weak var session: SyncSession?

    /// A sink not yet attached: `SyncSession.init` sets `session`.
    init() {}

    func commit(_ transaction: EncodedTransaction) throws {
        guard let session else {
            throw SyncError(
                .store, "the user of this realm no longer exists; open the realm from a logged-in user's flexibleSyncConfiguration()")
        }
        let store = try session.openStore()
        try store.commit { writer in
            try transaction.bytes.withUnsafeBytes { raw in
                for record in transaction.records {
                    try writer.append(collection: record.collection, document: UnsafeRawBufferPointer(rebasing: raw[record.range]))
                }
            }
            for cursor in transaction.cursors { try writer.setCursor(cursor.value, named: cursor.name) }
        }
    }
}
