import Foundation
import Testing
@testable import IngestCore
import IngestSupport

/// Segment format versions 1 (frames checked with CRC-32) and 2 (CRC-32C):
/// this code writes 2 and reads both (Docs/SegmentFormat.md).
@Suite struct SegmentFormatVersionTests {
    /// A version 1 stream written by Python from Docs/SegmentFormat.md
    /// (`zlib.crc32`, independent of this code): store id
    /// 3F2504E0-4F89-41D3-9A0C-0305E82C3301, segment 7, created at
    /// 1,764,000,000,123 ms, schema `{}`, two transactions of `WeatherSensor`
    /// records `{n: 1, s: "v1"}`, then `{n: 2, …}` and `{n: 3, …}`, and the end frame.
    static let versionOneStream: [UInt8] = hexBytes([
        "44495345470d0a1a4829000000010000003f2504e04f8941d39a0c0305e82c330107000000000000007be897b69a0100",
        "000500000000fca9ea4e52250000000d005765617468657253656e736f7216000000106e000100000002730003000000",
        "76310000813091b3430c000000000000000700000001000000797268d252250000000d005765617468657253656e736f",
        "7216000000106e00020000000273000300000076320000a1e4aaa052250000000d005765617468657253656e736f7216",
        "000000106e000300000002730003000000763300007e559318430c000000010000000700000002000000f891785b4510",
        "00000003000000000000000200000000000000f517edb3",
    ])

    static func hexBytes(_ lines: [String]) -> [UInt8] {
        let hex = Array(lines.joined().utf8)
        return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    static func readAll(_ bytes: [UInt8]) throws -> (SegmentHeader, [SegmentEvent]) {
        let reader = try SegmentReader(gzipBytes: try Gzip.compress(bytes))
        var events: [SegmentEvent] = []
        while let event = try reader.next() { events.append(event) }
        return (reader.header, events)
    }

    /// A sealed stream of `version` written by SegmentWriter, uncompressed.
    static func stream(version: UInt16, transactions: Int = 5) throws -> [UInt8] {
        let sink = ByteSink()
        var header = SegmentHeader(
            storeId: SegmentFormatTests.storeId, segmentNumber: 7, createdAtMillis: 1_764_000_000_123, schema: SegmentFormatTests.schema)
        header.formatVersion = version
        let writer = try SegmentWriter(header: header) { sink.bytes.append(contentsOf: $0) }
        for t in 0..<transactions {
            try writer.append(collection: "WeatherSensor", document: HandBSON.sensor(Int64(t)))
            try writer.commit(transactionNumber: UInt64(t))
        }
        try writer.finish()
        return try Gzip.decompress(sink.bytes)
    }

    /// Where the header frame's CRC starts (after magic, type, length, payload).
    static func headerCRCOffset(_ bytes: [UInt8]) -> Int {
        8 + 5 + bytes.withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 9, as: UInt32.self))) }
    }

    /// Sets the header's version and recomputes its CRC with `checksum`.
    static func withVersion(_ version: UInt16, _ bytes: [UInt8], checksum: ([UInt8]) -> UInt32) -> [UInt8] {
        var bytes = bytes
        withUnsafeBytes(of: version.littleEndian) { bytes.replaceSubrange((8 + 5)..<(8 + 7), with: $0) }
        let end = headerCRCOffset(bytes)
        let crc = checksum(Array(bytes[8..<end]))
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(end..<(end + 4), with: $0) }
        return bytes
    }

    @Test func theVersionOneFixtureStillReads() throws {
        let (header, events) = try Self.readAll(Self.versionOneStream)
        #expect(header.formatVersion == 1)
        #expect(header.storeId == SegmentFormatTests.storeId)
        #expect(header.segmentNumber == 7 && header.createdAtMillis == 1_764_000_000_123)
        let records = events.compactMap { if case .record(let r) = $0 { return r } else { return nil } }
        #expect(records.map(\.collection) == ["WeatherSensor", "WeatherSensor", "WeatherSensor"])
        #expect(records.map { $0.document[7] } == [1, 2, 3])  // the int32 n
        let commits = events.compactMap { if case .commit(let c) = $0 { return c } else { return nil } }
        #expect(
            commits == [
                SegmentCommit(transactionNumber: 7 << 32, recordCount: 1), SegmentCommit(transactionNumber: 7 << 32 | 1, recordCount: 2),
            ])
        #expect(events.last == .end(SegmentEnd(recordCount: 3, transactionCount: 2)))
    }

    /// The version 1 path of the writer produces the fixture's bytes exactly.
    @Test func theWritersVersionOnePathMatchesTheFixture() throws {
        var header = SegmentHeader(storeId: SegmentFormatTests.storeId, segmentNumber: 7, createdAtMillis: 1_764_000_000_123)
        header.formatVersion = 1
        var bytes: [UInt8] = []
        SegmentFormat.appendStart(header, to: &bytes)
        let (_, events) = try Self.readAll(Self.versionOneStream)
        var pending = 0
        for event in events {
            switch event {
            case .record(let record):
                try SegmentFormat.appendRecord(collection: record.collection, document: record.document, version: 1, to: &bytes)
                pending += 1
            case .commit(let commit):
                SegmentFormat.appendCommit(transactionNumber: commit.transactionNumber, recordCount: pending, version: 1, to: &bytes)
                pending = 0
            case .end(let end):
                SegmentFormat.appendEnd(recordCount: end.recordCount, transactionCount: end.transactionCount, version: 1, to: &bytes)
            }
        }
        #expect(bytes == Self.versionOneStream)
    }

    @Test func versionTwoIsWrittenAndRoundTrips() throws {
        #expect(SegmentFormat.version == 2)
        let bytes = try Self.stream(version: 2)
        let (header, events) = try Self.readAll(bytes)
        #expect(header.formatVersion == 2 && header.schema == SegmentFormatTests.schema)
        let records = events.compactMap { if case .record(let r) = $0 { return r.document } else { return nil } }
        #expect(records == (0..<5).map { HandBSON.sensor(Int64($0)) })
        #expect(events.last == .end(SegmentEnd(recordCount: 5, transactionCount: 5)))
        // Every frame carries the CRC-32C of its type, length and payload.
        var offset = 8
        var frames = 0
        while offset < bytes.count {
            let length = bytes.withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self))) }
            let stored = bytes.withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset + 5 + length, as: UInt32.self))
            }
            #expect(stored == CRC32C.checksum(Array(bytes[offset..<(offset + 5 + length)])))
            #expect(stored != CRC32.checksum(Array(bytes[offset..<(offset + 5 + length)])))
            offset += 9 + length
            frames += 1
        }
        #expect(offset == bytes.count && frames == 1 + 5 * 2 + 1)
        // A version 1 writer's frames differ in their checksums only.
        let one = try Self.stream(version: 1)
        #expect(one.count == bytes.count)
        #expect(try Self.readAll(one).1 == events)
    }

    /// One changed byte anywhere after the magic is an error in both versions
    /// (a checksum, a length, a count or the version itself), never a crash
    /// or a silently different record.
    @Test func everyChangedByteIsDetectedInBothVersions() throws {
        for version: UInt16 in [1, 2] {
            let bytes = try Self.stream(version: version, transactions: 3)
            let (_, original) = try Self.readAll(bytes)
            for index in 8..<bytes.count {
                for flip: UInt8 in [0x01, 0x80] {
                    var damaged = bytes
                    damaged[index] ^= flip
                    do {
                        let (_, events) = try Self.readAll(damaged)
                        Issue.record(
                            "version \(version): a flip of byte \(index) read as \(events == original ? "the original" : "other events")")
                    } catch let error as SegmentError {
                        let expected: [SegmentError.Code] = [.checksumMismatch, .truncated, .malformedFrame, .frameTooLarge]
                        #expect(expected.contains(error.code), "version \(version), byte \(index): \(error)")
                    }
                }
            }
        }
    }

    /// A header whose version is unknown is `unsupportedVersion` when a known
    /// checksum vouches for it, `checksumMismatch` when it is damage.
    @Test func anUnknownVersionIsToldFromDamage() throws {
        let stream = try Self.stream(version: 2, transactions: 1)
        for checksum in [CRC32.checksum as ([UInt8]) -> UInt32, CRC32C.checksum as ([UInt8]) -> UInt32] {
            do {
                _ = try Self.readAll(Self.withVersion(3, stream, checksum: checksum))
                Issue.record("version 3 was accepted")
            } catch let error as SegmentError {
                #expect(error.code == .unsupportedVersion)
            }
        }
        var damaged = stream
        damaged[8 + 5] = 3
        do {
            _ = try Self.readAll(damaged)
            Issue.record("a damaged version field was accepted")
        } catch let error as SegmentError {
            #expect(error.code == .checksumMismatch)
        }
    }

    /// A version 2 stream whose frames carry version 1's checksum (a writer
    /// that changed the version but not the CRC) is refused at its first
    /// frame after the header, and the other way round.
    @Test func eachVersionRequiresItsOwnChecksum() throws {
        let cases: [(written: UInt16, claimed: UInt16, checksum: ([UInt8]) -> UInt32)] = [
            (1, 2, CRC32C.checksum as ([UInt8]) -> UInt32), (2, 1, CRC32.checksum as ([UInt8]) -> UInt32),
        ]
        for (written, claimed, checksum) in cases {
            let bytes = Self.withVersion(claimed, try Self.stream(version: written, transactions: 1), checksum: checksum)
            do {
                _ = try Self.readAll(bytes)
                Issue.record("version \(written) frames were accepted as version \(claimed)")
            } catch let error as SegmentError {
                #expect(error.code == .checksumMismatch && error.offset == Self.headerCRCOffset(bytes) + 4)
            }
        }
    }
}
