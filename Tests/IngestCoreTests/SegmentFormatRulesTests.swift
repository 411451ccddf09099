import Foundation
import Testing
@testable import IngestCore
import IngestSupport

/// Issue 18: the stream rules Docs/SegmentFormat.md now states, pinned:
/// header flags are ignored, a second header frame is malformed, a commit of
/// zero records is a transaction, optional frames may stand inside a
/// transaction, and a segment of no transaction is valid.
@Suite struct SegmentFormatRulesTests {
    static let store = SegmentStoreID(uuidString: "3F2504E0-4F89-41D3-9A0C-0305E82C3301")!

    /// One frame with its CRC (Docs/SegmentFormat.md, "The segment stream").
    func frame(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        let start = SegmentFormat.beginFrame(type, to: &bytes)
        bytes += payload
        SegmentFormat.endFrame(start: start, version: SegmentFormat.version, to: &bytes)
        return bytes
    }

    func start(flags: UInt16 = 0) -> [UInt8] {
        var header: [UInt8] = []
        SegmentFormat.appendStart(
            SegmentHeader(storeId: Self.store, segmentNumber: 7, createdAtMillis: 1, schema: SegmentFormat.emptyDocument),
            to: &header)
        // Flags are bytes 2..<4 of the header payload: magic (8), type (1), length (4), version (2).
        withUnsafeBytes(of: flags.littleEndian) { header.replaceSubrange(15..<17, with: $0) }
        let payload = Array(header[13..<(header.count - 4)])
        return SegmentFormat.magic + frame(0x48, payload)
    }

    func record() throws -> [UInt8] {
        var bytes: [UInt8] = []
        try SegmentFormat.appendRecord(collection: "Tx", document: SegmentFormat.emptyDocument, to: &bytes)
        return bytes
    }

    func commit(_ number: UInt64, _ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        SegmentFormat.appendCommit(transactionNumber: number, recordCount: count, to: &bytes)
        return bytes
    }

    func end(_ records: Int, _ transactions: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        SegmentFormat.appendEnd(recordCount: records, transactionCount: transactions, to: &bytes)
        return bytes
    }

    func read(_ stream: [UInt8]) throws -> (records: Int, transactions: Int) {
        let reader = try SegmentReader(gzipBytes: try Gzip.compress(stream))
        var records = 0, transactions = 0
        while let event = try reader.next() {
            if case .record = event { records += 1 }
            if case .commit = event { transactions += 1 }
        }
        return (records, transactions)
    }

    @Test func headerFlagsAreIgnored() throws {
        let stream = start(flags: 0xBEEF) + (try record()) + commit(1, 1) + end(1, 1)
        #expect(try read(stream) == (1, 1))
    }

    @Test func aSecondHeaderFrameIsMalformed() throws {
        let stream = start() + Array(start().dropFirst(8)) + end(0, 0)
        #expect(throws: SegmentError.self) { try read(stream) }
    }

    @Test func aCommitOfZeroRecordsIsATransaction() throws {
        let stream = start() + commit(1, 0) + (try record()) + commit(2, 1) + end(1, 2)
        #expect(try read(stream) == (1, 2))
    }

    @Test func optionalFramesMayStandInsideATransaction() throws {
        let stream = start() + (try record()) + frame(0x78, [1, 2, 3]) + (try record()) + frame(0x61, []) + commit(1, 2) + end(2, 1)
        #expect(try read(stream) == (2, 1))
        // Any other unknown type is an error.
        let unknown = start() + (try record()) + frame(0x01, [1]) + commit(1, 1) + end(1, 1)
        #expect(throws: SegmentError.self) { try read(unknown) }
    }

    @Test func aSegmentOfNoTransactionIsValid() throws {
        #expect(try read(start() + end(0, 0)) == (0, 0))
    }
}
