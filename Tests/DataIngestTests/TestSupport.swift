import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// A transaction sink that keeps what was committed, in memory. It stands in
/// for the segment store, which lives in its own module area.
final class MemorySink: TransactionSink {
    private let box = LockedBox<[EncodedTransaction]>([])
    private let failure = LockedBox<(any Error)?>(nil)

    var transactions: [EncodedTransaction] { box.withLock { $0 } }

    /// Makes the next commits throw `error` (nil: succeed again).
    func failCommits(with error: (any Error)?) { failure.withLock { $0 = error } }

    func commit(_ transaction: EncodedTransaction) throws {
        if let error = failure.withLock({ $0 }) { throw error }
        box.withLock { $0.append(transaction) }
    }

    /// Every committed record, decoded.
    func documents() throws -> [(collection: String, document: BSONDocument)] {
        try transactions.flatMap { transaction in
            try transaction.records.indices.map { index in
                (transaction.records[index].collection, try BSONDocument(bson: transaction.documentBytes(at: index)))
            }
        }
    }
}

/// A synced configuration on its own file, with a memory sink.
func syncedConfiguration(
    _ types: [ObjectBase.Type]?, in directory: TemporaryDirectory, sink: MemorySink,
    name: String = "synced"
) -> Realm.Configuration {
    Realm.Configuration(
        fileURL: directory.file("\(name).realm"), objectTypes: types,
        syncConfiguration: SyncConfiguration(identifier: name, transactionSink: sink))
}

/// Asserts that `body` throws a RealmError with `code` and returns it.
@discardableResult
func expectRealmError(
    _ code: RealmError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> RealmError? {
    do {
        try body()
        Issue.record("expected RealmError \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as RealmError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected RealmError \(code), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
