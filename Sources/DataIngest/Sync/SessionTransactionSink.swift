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
        try transaction.bytes.withUnsafeBytes { try commit(bytes: $0, records: transaction.records, cursors: transaction.cursors) }
    }

    /// Commits the documents in `bytes` (`records` give their ranges) and
    /// `cursors` as one transaction, framed in a buffer reserved for all of
    /// them at once (grown from a small one, a 1,000-line transaction of
    /// ingest-forward was copied about ten times over).
    func commit(bytes: UnsafeRawBufferPointer, records: [EncodedRecord], cursors: [(name: String, value: [UInt8])]) throws {
        guard let session else {
            throw SyncError(
                .store, "the user of this realm no longer exists; open the realm from a logged-in user's flexibleSyncConfiguration()")
        }
        let store = try session.openStore()
        // A record frame adds a header, the collection name and a CRC (under 16 bytes and the name).
        let perRecord = 16 + (records.first?.collection.utf8.count ?? 0)
        let cursorBytes = cursors.reduce(0) { $0 + 16 + $1.name.utf8.count + $1.value.count }
        var writer = TransactionWriter(reservingCapacity: bytes.count + records.count * perRecord + cursorBytes)
        for record in records {
            try writer.append(collection: record.collection, document: UnsafeRawBufferPointer(rebasing: bytes[record.range]))
        }
        for cursor in cursors { try writer.setCursor(cursor.value, named: cursor.name) }
        try store.commit(writer)
    }
}
