import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport
import IngestTestSupport

/// Cursors committed with transactions (`c` frames, Docs/SegmentFormat.md):
/// the latest committed value of each name, recovered at open from the
/// segments on disk and from `CURSORS` once they are gone.
@Suite struct StoreCursorTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func commit(_ store: SegmentStore, id: Int64, cursor: String?, named name: String = "file") throws {
        try store.commit { tx in
            if id >= 0 { try tx.append(collection: "Tx", document: TxDocument.make(id: id, k: 0, n: 1)) }
            if let cursor { try tx.setCursor(bytes(cursor), named: name) }
        }
    }

    @Test(arguments: [false, true])
    func theLatestCommittedCursorSurvivesReopenSealingAndAcknowledgement(encrypted: Bool) throws {
        let dir = try TemporaryDirectory("store")
        let configuration = StoreTests.configuration(dir) { if encrypted { $0.encryptionKey = StoreEncryptionTests.key } }
        var store = try SegmentStore.open(configuration)
        #expect(store.cursor(named: "file") == nil)
        for id in 0..<10 { try Self.commit(store, id: Int64(id), cursor: "offset \(id)") }
        try Self.commit(store, id: 10, cursor: nil)  // a transaction without a cursor keeps it
        try Self.commit(store, id: 11, cursor: "other", named: "second")
        #expect(store.cursor(named: "file") == Self.bytes("offset 9"))
        // Reopened with the segment still active: recovered from its frames.
        try store.close()
        store = try SegmentStore.open(configuration)
        #expect(store.cursors == ["file": Self.bytes("offset 9"), "second": Self.bytes("other")])
        // A transaction of a cursor only (no record) commits, and counts no object.
        try Self.commit(store, id: -1, cursor: "offset 10")
        #expect(store.counters.committedObjects == 0 && store.counters.committedTransactions == 1)
        // The server's reader sees only the records: 12 of them, in 13 transactions.
        try store.flush()
        var records = 0
        var transactions = 0
        for segment in store.pendingSegments() {
            let reader = try store.reader(for: segment)
            while let event = try reader.next() {
                if case .record(let record) = event { #expect(record.collection == "Tx"); records += 1 }
                if case .commit = event { transactions += 1 }
            }
        }
        #expect(records == 12 && transactions == 13)
        // Every segment acknowledged and deleted: the cursors stay (CURSORS).
        for segment in store.pendingSegments() { try store.acknowledge(segment: segment.number) }
        try store.close()
        #expect(FileManager.default.fileExists(atPath: dir.path("store") + "/CURSORS"))
        store = try SegmentStore.open(configuration)
        #expect(store.cursors == ["file": Self.bytes("offset 10"), "second": Self.bytes("other")])
        // An empty value removes a cursor, also across a reopen.
        try Self.commit(store, id: 12, cursor: "", named: "second")
        #expect(store.cursor(named: "second") == nil)
        try store.close()
        store = try SegmentStore.open(configuration)
        #expect(store.cursors == ["file": Self.bytes("offset 10")])
        try store.flush()
        for segment in store.pendingSegments() { try store.acknowledge(segment: segment.number) }
        try store.close()
        store = try SegmentStore.open(configuration)
        #expect(store.cursors == ["file": Self.bytes("offset 10")])
        // Bad names and values are refused before anything is written.
        #expect(throws: SegmentError.self) { try store.commit { try $0.setCursor([], named: "") } }
        #expect(throws: SegmentError.self) {
            try store.commit { try $0.setCursor([UInt8](repeating: 1, count: (64 << 10) + 1), named: "big") }
        }
        try store.close()
    }

    /// A transaction cut off before its commit frame (a torn tail, as `kill -9`
    /// mid-copy leaves it) takes its cursor with it: the recovered cursor is
    /// the one of the last complete transaction, and so are the records.
    @Test func aTornTransactionsCursorIsNotRecovered() throws {
        let dir = try TemporaryDirectory("store")
        let store = try SegmentStore.open(StoreTests.configuration(dir) { $0.preallocationBytes = 0 })
        try Self.commit(store, id: 1, cursor: "after 1")
        let (path, sizeAfterFirst) = store.guarded.withLock { ($0.state.active!.path, $0.state.active!.size) }
        try Self.commit(store, id: 2, cursor: "after 2")
        let size = store.guarded.withLock { $0.state.active!.size }
        let content = [UInt8](FileManager.default.contents(atPath: path)!)[..<size]
        // A copy of the store whose active file lacks the second commit frame.
        let copy = dir.path("copy")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir.path("store") + "/STORE_ID", toPath: copy + "/STORE_ID")
        let torn = Array(content.dropLast(SegmentFormat.commitFrameSize))
        #expect(torn.count > sizeAfterFirst)
        _ = FileManager.default.createFile(atPath: copy + "/" + (path as NSString).lastPathComponent, contents: Data(torn))
        let recovered = try SegmentStore.open(StoreTests.configuration(dir) { $0.directory = copy })
        #expect(recovered.cursor(named: "file") == Self.bytes("after 1"))
        #expect(recovered.counters.pendingObjects == 1 && recovered.counters.pendingSegments == 1)
        try recovered.close()
        try store.close()
    }

    /// A damaged `CURSORS` is an error at open that names the fix, never a
    /// silent loss of positions.
    @Test func aDamagedCursorsFileFailsTheOpen() throws {
        let dir = try TemporaryDirectory("store")
        let configuration = StoreTests.configuration(dir)
        var store = try SegmentStore.open(configuration)
        try Self.commit(store, id: 1, cursor: "x")
        try store.flush()
        try store.close()
        let file = dir.path("store") + "/CURSORS"
        var bytes = [UInt8](FileManager.default.contents(atPath: file)!)
        bytes[bytes.count - 6] ^= 0xFF
        _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))
        #expect(throws: SegmentStoreError.self) { _ = try SegmentStore.open(configuration) }
        try FileManager.default.removeItem(atPath: file)
        store = try SegmentStore.open(configuration)
        #expect(store.cursor(named: "file") == Self.bytes("x"))  // the sealed segment still holds it
        try store.close()
    }
}
