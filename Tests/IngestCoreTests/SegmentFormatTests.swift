import Foundation
import Testing
@testable import IngestCore
import IngestSupport
import IngestTestSupport

/// Builds small BSON documents by hand (the BSON codec lives elsewhere).
enum HandBSON {
    /// `{ "_id": int64 n, "deviceId": "WX...", "temperature": double, "windSpeed": int32, "ok": bool }`
    static func sensor(_ n: Int64) -> [UInt8] {
        var body: [UInt8] = []
        func name(_ s: String) { body.append(contentsOf: s.utf8); body.append(0) }
        body.append(0x12); name("_id"); withUnsafeBytes(of: n.littleEndian) { body.append(contentsOf: $0) }
        let device = "WX\(n % 97)"
        body.append(0x02); name("deviceId")
        withUnsafeBytes(of: Int32(device.utf8.count + 1).littleEndian) { body.append(contentsOf: $0) }
        body.append(contentsOf: device.utf8); body.append(0)
        body.append(0x01); name("temperature");
        withUnsafeBytes(of: (20.5 + Double(n % 10)).bitPattern.littleEndian) { body.append(contentsOf: $0) }
        body.append(0x10); name("windSpeed"); withUnsafeBytes(of: Int32(n % 30).littleEndian) { body.append(contentsOf: $0) }
        body.append(0x08); name("ok"); body.append(1)
        var doc: [UInt8] = []
        withUnsafeBytes(of: Int32(body.count + 5).littleEndian) { doc.append(contentsOf: $0) }
        doc.append(contentsOf: body)
        doc.append(0)
        return doc
    }
}

final class ByteSink: @unchecked Sendable {  // used by one test thread only
    var bytes: [UInt8] = []
}

@Suite struct SegmentFormatTests {
    static let storeId = SegmentStoreID(uuidString: "3F2504E0-4F89-41D3-9A0C-0305E82C3301")!
    static let schema: [UInt8] = {
        // { "types": "WeatherSensor" }
        var body: [UInt8] = [0x02] + Array("types".utf8) + [0]
        let value = "WeatherSensor"
        withUnsafeBytes(of: Int32(value.utf8.count + 1).littleEndian) { body.append(contentsOf: $0) }
        body += Array(value.utf8) + [0]
        var doc: [UInt8] = []
        withUnsafeBytes(of: Int32(body.count + 5).littleEndian) { doc.append(contentsOf: $0) }
        return doc + body + [0]
    }()

    /// A sealed segment with `transactions` transactions of 1...3 records.
    static func sealed(transactions: Int, number: UInt64 = 7) throws -> (bytes: [UInt8], records: [(String, [UInt8])]) {
        let sink = ByteSink()
        let header = SegmentHeader(storeId: storeId, segmentNumber: number, createdAtMillis: 1_764_000_000_123, schema: schema)
        let writer = try SegmentWriter(header: header) { sink.bytes.append(contentsOf: $0) }
        var records: [(String, [UInt8])] = []
        var n: Int64 = 0
        for t in 0..<transactions {
            for _ in 0..<(t % 3 + 1) {
                let collection = n % 5 == 0 ? "Invoice" : "WeatherSensor"
                let doc = HandBSON.sensor(n)
                try writer.append(collection: collection, document: doc)
                records.append((collection, doc))
                n += 1
            }
            try writer.commit(transactionNumber: UInt64(100 + t))
        }
        try writer.finish()
        return (sink.bytes, records)
    }

    static func readAll(_ reader: SegmentReader) throws -> [SegmentEvent] {
        var events: [SegmentEvent] = []
        while let event = try reader.next() { events.append(event) }
        return events
    }

    @Test func writerAndReaderRoundTrip() throws {
        let (bytes, records) = try Self.sealed(transactions: 50)
        let reader = try SegmentReader(gzipBytes: bytes)
        #expect(reader.header.storeId == Self.storeId)
        #expect(reader.header.segmentNumber == 7)
        #expect(reader.header.createdAtMillis == 1_764_000_000_123)
        #expect(reader.header.schema == Self.schema)
        let events = try Self.readAll(reader)
        let read = events.compactMap { if case .record(let r) = $0 { return (r.collection, r.document) } else { return nil } }
        #expect(read.count == records.count)
        #expect(zip(read, records).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 })
        let commits = events.compactMap { if case .commit(let c) = $0 { return c } else { return nil } }
        #expect(commits.map(\.transactionNumber) == (0..<50).map { UInt64(100 + $0) })
        #expect(events.last == .end(SegmentEnd(recordCount: records.count, transactionCount: 50)))
    }

    /// Follows Docs/SegmentFormat.md with nothing but zlib (via `gzip -dc` and
    /// our inflater) and byte arithmetic: the document matches the bytes.
    @Test func documentedBytesDecodeWithoutTheReader() throws {
        let (bytes, records) = try Self.sealed(transactions: 20)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("seg-doc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("00000000000000000007.seg.gz")
        try Data(bytes).write(to: file)
        let zcat = try runProcess("/usr/bin/gzip", ["-dc", file.path], timeout: 60)
        let plain = zcat.outputBytes
        #expect(zcat.status == 0, "\(zcat.errorOutput)")
        #expect(plain == (try Gzip.decompress(bytes)))

        func u16(_ o: Int) -> Int { Int(plain[o]) | Int(plain[o + 1]) << 8 }
        func u32(_ o: Int) -> Int { u16(o) | u16(o + 2) << 16 }
        func u64(_ o: Int) -> UInt64 { UInt64(u32(o)) | UInt64(u32(o + 4)) << 32 }
        #expect(Array(plain[0..<8]) == [0x44, 0x49, 0x53, 0x45, 0x47, 0x0D, 0x0A, 0x1A])
        var offset = 8
        var decoded: [(String, [UInt8])] = []
        var types: [UInt8] = []
        var pendingRecords = 0
        while offset < plain.count {
            let type = plain[offset]
            let length = u32(offset + 1)
            let payload = offset + 5
            let crc = UInt32(u32(payload + length))
            #expect(crc == CRC32C.checksum(Array(plain[offset..<(payload + length)])))  // version 2: CRC-32C
            types.append(type)
            switch type {
            case 0x48:  // H
                #expect(u16(payload) == 2)
                #expect(u16(payload + 2) == 0)
                #expect(Array(plain[(payload + 4)..<(payload + 20)]) == Self.storeId.bytes)
                #expect(u64(payload + 20) == 7)
                #expect(u64(payload + 28) == 1_764_000_000_123)
                let schemaLength = u32(payload + 36)
                #expect(Array(plain[(payload + 36)..<(payload + 36 + schemaLength)]) == Self.schema)
            case 0x52:  // R
                let nameLength = u16(payload)
                let name = String(decoding: plain[(payload + 2)..<(payload + 2 + nameLength)], as: UTF8.self)
                let docStart = payload + 2 + nameLength
                let docLength = u32(docStart)
                #expect(docStart + docLength == payload + length)  // the BSON length prefix fills the payload
                #expect(plain[docStart + docLength - 1] == 0)
                decoded.append((name, Array(plain[docStart..<(docStart + docLength)])))
                pendingRecords += 1
            case 0x43:  // C
                #expect(length == 12)
                #expect(u32(payload + 8) == pendingRecords)
                pendingRecords = 0
            case 0x45:  // E
                #expect(u64(payload) == UInt64(records.count))
                #expect(u64(payload + 8) == 20)
            default:
                Issue.record("unexpected frame type \(type)")
            }
            offset = payload + length + 4
        }
        #expect(offset == plain.count)
        #expect(types.first == 0x48 && types.last == 0x45)
        #expect(decoded.count == records.count)
        #expect(zip(decoded, records).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 })
    }

    @Test func everyTruncationOfTheStreamIsAnErrorNeverACrash() throws {
        let (bytes, _) = try Self.sealed(transactions: 6)
        let plain = try Gzip.decompress(bytes)
        for cut in 0..<plain.count {
            do {
                let reader = try SegmentReader(source: MemoryByteSource(Array(plain[..<cut])))
                _ = try Self.readAll(reader)
                Issue.record("a stream cut at \(cut) was accepted")
            } catch let error as SegmentError {
                #expect(error.code == .truncated || error.code == .badMagic, "cut \(cut): \(error)")
            }
        }
        // A cut gzip file is reported by the gzip layer.
        for cut in stride(from: 0, to: bytes.count, by: 3) {
            #expect(throws: SegmentError.self) { _ = try Self.readAll(try SegmentReader(gzipBytes: Array(bytes[..<cut]))) }
        }
    }

    @Test func activeModeStopsAtFrameBoundariesAndTracksTheLastCommit() throws {
        let (bytes, _) = try Self.sealed(transactions: 4)
        var plain = try Gzip.decompress(bytes)
        plain.removeLast(SegmentFormat.frameOverhead + 16)  // drop the end frame
        let reader = try SegmentReader(source: MemoryByteSource(plain), requiresEnd: false)
        _ = try Self.readAll(reader)
        #expect(reader.transactionCount == 4)
        #expect(reader.offsetAfterLastCommit == plain.count)
        #expect(reader.lastTransactionNumber == 103)
        // Half a transaction after the last commit is visible as uncommitted records.
        var torn = plain
        try SegmentFormat.appendRecord(collection: "WeatherSensor", document: HandBSON.sensor(1), to: &torn)
        let reader2 = try SegmentReader(source: MemoryByteSource(torn), requiresEnd: false)
        _ = try Self.readAll(reader2)
        #expect(reader2.uncommittedRecordCount == 1)
        #expect(reader2.offsetAfterLastCommit == plain.count)
    }

    /// The client store preallocates its active segment: a zero byte where a
    /// frame type belongs ends an active stream (whatever follows: an
    /// unpublished, partly copied group), but is still an error in a sealed one.
    @Test func aZeroFrameTypeEndsAnActiveStreamOnly() throws {
        let (bytes, _) = try Self.sealed(transactions: 3)
        var plain = try Gzip.decompress(bytes)
        plain.removeLast(SegmentFormat.frameOverhead + 16)  // drop the end frame
        var unpublished: [UInt8] = []
        try SegmentFormat.appendRecord(collection: "WeatherSensor", document: HandBSON.sensor(9), to: &unpublished)
        SegmentFormat.appendCommit(transactionNumber: 999, recordCount: 1, to: &unpublished)
        unpublished[0] = 0
        for tail in [[UInt8](repeating: 0, count: 4096), [0], unpublished + [UInt8](repeating: 0, count: 100)] {
            let reader = try SegmentReader(source: MemoryByteSource(plain + tail), requiresEnd: false)
            _ = try Self.readAll(reader)
            #expect(reader.endedAtUnwrittenSpace)
            #expect(reader.transactionCount == 3 && reader.offsetAfterLastCommit == plain.count)
            #expect(try reader.next() == nil)
        }
        // A commit frame written with storeCommit is the same bytes as appendCommit's.
        var appended: [UInt8] = []
        SegmentFormat.appendCommit(transactionNumber: 0x1234_5678_9ABC, recordCount: 7, to: &appended)
        var stored = [UInt8](repeating: 0, count: SegmentFormat.commitFrameSize)
        stored.withUnsafeMutableBytes {
            SegmentFormat.storeCommit(transactionNumber: 0x1234_5678_9ABC, recordCount: 7, at: $0.baseAddress!)
        }
        #expect(stored == appended)
        // In a sealed stream a zero type is malformed.
        var sealedPlain = try Gzip.decompress(bytes)
        sealedPlain.insert(0, at: plain.count)
        #expect(throws: SegmentError.self) { _ = try Self.readAll(try SegmentReader(source: MemoryByteSource(sealedPlain))) }
    }

    @Test func flippedAndRandomBytesAreErrorsNeverCrashes() throws {
        let (bytes, _) = try Self.sealed(transactions: 10)
        let plain = try Gzip.decompress(bytes)
        var state: UInt64 = 12345
        func random() -> Int { state = state &* 6364136223846793005 &+ 1442695040888963407; return Int(state >> 33) }
        for position in 0..<plain.count {
            var bad = plain
            bad[position] ^= UInt8(1 + random() % 255)
            #expect(throws: SegmentError.self) { _ = try Self.readAll(try SegmentReader(source: MemoryByteSource(bad))) }
        }
        for _ in 0..<300 {
            var garbage = SegmentFormat.magic + [SegmentFormat.FrameType.header]
            garbage += (0..<(random() % 200)).map { _ in UInt8(truncatingIfNeeded: random()) }
            #expect(throws: SegmentError.self) { _ = try Self.readAll(try SegmentReader(source: MemoryByteSource(garbage))) }
            #expect(throws: SegmentError.self) { _ = try SegmentReader(gzipBytes: garbage) }
        }
    }

    @Test func oversizedFramesAndBombsAreRefused() throws {
        var plain: [UInt8] = []
        SegmentFormat.appendStart(SegmentHeader(storeId: Self.storeId, segmentNumber: 1, createdAtMillis: 0), to: &plain)
        plain += [SegmentFormat.FrameType.record, 0xFF, 0xFF, 0xFF, 0x7F]
        let reader = try SegmentReader(source: MemoryByteSource(plain))
        #expect { _ = try reader.next() } throws: { ($0 as? SegmentError)?.code == .frameTooLarge }

        // A frame claiming 15 MiB filled with zeros: the ratio limit stops inflating early.
        var bomb: [UInt8] = []
        SegmentFormat.appendStart(SegmentHeader(storeId: Self.storeId, segmentNumber: 1, createdAtMillis: 0), to: &bomb)
        bomb += [SegmentFormat.FrameType.record, 0x00, 0x00, 0xF0, 0x00]
        bomb += [UInt8](repeating: 0, count: 15 << 20)
        let packed = try Gzip.compress(bomb, level: 9)
        #expect {
            _ = try Self.readAll(try SegmentReader(gzipBytes: packed, limits: .init(gzip: GzipLimits(maxRatio: 100))))
        } throws: { ($0 as? SegmentError)?.gzipCode == .limitExceeded }
    }

    @Test func writerRejectsBadDocumentsAndNames() throws {
        var buffer: [UInt8] = [1, 2, 3]
        #expect(throws: SegmentError.self) { try SegmentFormat.appendRecord(collection: "", document: HandBSON.sensor(1), to: &buffer) }
        #expect(throws: SegmentError.self) { try SegmentFormat.appendRecord(collection: "X", document: [6, 0, 0, 0, 0], to: &buffer) }
        #expect(throws: SegmentError.self) { try SegmentFormat.appendRecord(collection: "X", document: [5, 0, 0, 0, 1], to: &buffer) }
        #expect(buffer == [1, 2, 3])  // unchanged after a rejected append
    }

    @Test func storeIdRoundTripsThroughText() {
        let id = SegmentStoreID.random()
        #expect(SegmentStoreID(uuidString: id.uuidString) == id)
        #expect(id.bytes[6] >> 4 == 4)
        #expect(SegmentStoreID(uuidString: "not-a-uuid") == nil)
    }
}
