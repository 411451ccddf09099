import Dispatch
import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

@Suite struct LocalStoreConcurrencyTests {
    @Test func readersRunWhileAWriterHoldsATransaction() throws {
        let directory = try TemporaryDirectory("local")
        let store = try LocalStore(fileURL: directory.file("wal.realm"), schema: try LocalTestSchema.schema())
        try store.write { try $0.insert(LocalTestSchema.task(title: "committed"), into: "Task") }

        let inTransaction = DispatchSemaphore(value: 0)
        let mayCommit = DispatchSemaphore(value: 0)
        let writerDone = DispatchSemaphore(value: 0)
        let writerError = LockedBox<(any Error)?>(nil)
        Thread.detachNewThread {
            do {
                try store.write { transaction in
                    try transaction.insert(LocalTestSchema.task(title: "pending"), into: "Task")
                    inTransaction.signal()
                    _ = mayCommit.wait(timeout: .now() + 20)
                }
            } catch {
                writerError.withLock { $0 = error }
            }
            writerDone.signal()
        }
        #expect(inTransaction.wait(timeout: .now() + 20) == .success)

        // While the write is open, readers on other threads finish and see the last commit.
        let counts = LockedBox<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let count = (try? store.read { reader in try reader.count(LocalQuery("Task")) }) ?? -1
            counts.withLock { $0.append(count) }
        }
        #expect(counts.withLock { $0 } == [1, 1, 1, 1])

        mayCommit.signal()
        #expect(writerDone.wait(timeout: .now() + 20) == .success)
        #expect(writerError.withLock { $0 } == nil)
        #expect(try store.count(LocalQuery("Task")) == 2)
        store.close()
    }

    @Test func writersFromManyThreadsAreSerialized() throws {
        let directory = try TemporaryDirectory("local")
        let store = try LocalStore(fileURL: directory.file("writers.realm"), schema: try LocalTestSchema.schema())
        let failures = LockedBox(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<10 {
                do {
                    try store.write { transaction in
                        let before = try transaction.count(LocalQuery("Counter"))
                        try transaction.insert(["name": .string("t\(thread)-\(index)"), "value": .int64(Int64(before))], into: "Counter")
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        // Each transaction saw every earlier one: the values are 0..<40 exactly once.
        let values = try store.objects(LocalQuery("Counter").sorted(by: "value")).map { $0.document["value"] }
        #expect(values == (0..<40).map { BSON.int64(Int64($0)) })
        store.close()
    }

    @Test func aSecondStoreOnTheSameFileSeesCommits() throws {
        let directory = try TemporaryDirectory("local")
        let url = directory.file("shared.realm")
        let first = try LocalStore(fileURL: url, schema: try LocalTestSchema.schema())
        let second = try LocalStore(fileURL: url, schema: try LocalTestSchema.schema())
        try first.write { try $0.insert(LocalTestSchema.task(title: "from first"), into: "Task") }
        #expect(try second.count(LocalQuery("Task")) == 1)
        first.close()
        second.close()
    }
}
