import Foundation
import Testing
import IngestCore
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// A store upgraded from a version that wrote segment format version 1
/// (CRC-32 frames) keeps every segment the old version left.
@Suite struct StoreFormatVersionTests {
    final class Bytes: @unchecked Sendable {  // one test thread
        var value: [UInt8] = []
    }

    /// The records of transaction `id` in version 1 frames.
    static func appendVersionOne(_ id: Int64, segment: UInt64, index: Int, to stream: inout [UInt8]) throws {
        let n = Int32(id % 3 + 1)
        for k in 0..<n {
            try SegmentFormat.appendRecord(collection: "Tx", document: TxDocument.make(id: id, k: k, n: n), version: 1, to: &stream)
        }
        SegmentFormat.appendCommit(transactionNumber: segment << 32 | UInt64(index), recordCount: Int(n), version: 1, to: &stream)
    }

    /// A sealed and an active (torn) version 1 segment are delivered after
    /// the upgrade: the active one is sealed as version 1 (its end frame a
    /// CRC-32 one), and new commits go into version 2 segments. Nothing is
    /// quarantined.
    @Test func versionOneSegmentsLeftByAnOlderStoreAreDelivered() throws {
        let dir = try TemporaryDirectory("store-v1")
        let configuration = StoreTests.configuration(dir)
        let first = try SegmentStore.open(configuration)
        let storeId = first.storeId
        try first.close()
        let root = dir.path("store")

        var header = SegmentHeader(storeId: storeId, segmentNumber: 1, createdAtMillis: 1_764_000_000_000)
        header.formatVersion = 1
        let sealed = Bytes()
        let writer = try SegmentWriter(header: header) { sealed.value.append(contentsOf: $0) }
        for id in 0..<2 {
            let n = Int32(id % 3 + 1)
            for k in 0..<n { try writer.append(collection: "Tx", document: TxDocument.make(id: Int64(id), k: k, n: n)) }
            try writer.commit(transactionNumber: 1 << 32 | UInt64(id))
        }
        try writer.finish()
        try Data(sealed.value).write(to: URL(fileURLWithPath: root + "/" + SegmentStore.fileName(1) + ".seg.gz"))

        header.segmentNumber = 2
        var active: [UInt8] = []
        SegmentFormat.appendStart(header, to: &active)
        try Self.appendVersionOne(2, segment: 2, index: 0, to: &active)
        try Self.appendVersionOne(3, segment: 2, index: 1, to: &active)
        var torn = active
        try Self.appendVersionOne(4, segment: 2, index: 2, to: &torn)
        active += torn[active.count..<(torn.count - 7)]  // the last transaction's commit frame is cut
        try Data(active).write(to: URL(fileURLWithPath: root + "/" + SegmentStore.fileName(2) + ".active"))

        let store = try SegmentStore.open(configuration)
        for id in 5..<7 { try TxDocument.commit(store, id: Int64(id)) }
        #expect(try StoreCheck.transactions(in: store) == [0, 1, 2, 3, 5, 6])
        let versions = try store.pendingSegments().map { try store.reader(for: $0).header.formatVersion }
        #expect(versions == [1, 1, 2])
        #expect(store.counters.quarantinedSegments == 0)
        // The sealed leftover is a complete version 1 segment: its end frame
        // counts the recovered transactions and carries a CRC-32.
        let resealed = try Gzip.decompress([UInt8](FileManager.default.contents(atPath: store.pendingSegments()[1].path)!))
        let endFrame = Array(resealed.suffix(SegmentFormat.frameOverhead + 16))
        #expect(endFrame[0] == SegmentFormat.FrameType.end)
        let crc = endFrame.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 21, as: UInt32.self)) }
        #expect(crc == CRC32.checksum(Array(endFrame.prefix(21))))
        try store.close()
    }
}
