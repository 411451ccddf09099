#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// A transaction sink for the logger tests: keeps the committed documents,
/// can be held (commits wait until released) and can be made to fail. It is
/// the seam below the writer, not the writer itself.
final class CollectingSink: TransactionSink, @unchecked Sendable {  // state in LockedBoxes
    private let documents = LockedBox<[BSONDocument]>([])
    private let transactions = LockedBox(0)
    private let gate = LockedBox(false)  // true: commits wait
    private let failing = LockedBox(false)
    private let waiting = LockedBox(0)

    func commit(_ transaction: EncodedTransaction) throws {
        waiting.withLock { $0 += 1 }
        let deadline = monotonicNow() + 20
        while gate.withLock({ $0 }) && monotonicNow() < deadline { usleep(1_000) }
        waiting.withLock { $0 -= 1 }
        if failing.withLock({ $0 }) {
            throw TestSupportError("storage full (injected)")
        }
        var decoded: [BSONDocument] = []
        for index in transaction.records.indices {
            decoded.append(try BSONDocument(bson: Array(transaction.documentBytes(at: index))))
        }
        documents.withLock { $0 += decoded }
        transactions.withLock { $0 += 1 }
    }

    var committed: [BSONDocument] { documents.withLock { $0 } }
    var transactionCount: Int { transactions.withLock { $0 } }
    /// Commits currently waiting at the gate.
    var waitingCommits: Int { waiting.withLock { $0 } }
    func hold() { gate.withLock { $0 = true } }
    func release() { gate.withLock { $0 = false } }
    func fail(_ on: Bool) { failing.withLock { $0 = on } }

    /// A synced realm configuration whose commits come here.
    func configuration(in directory: String) -> Realm.Configuration {
        Realm.Configuration(
            fileURL: URL(fileURLWithPath: directory + "/logger.realm"),
            syncConfiguration: SyncConfiguration(identifier: "logger-test", transactionSink: self))
    }
}
