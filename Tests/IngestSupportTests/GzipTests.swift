import Foundation
import Testing
@testable import IngestSupport
import IngestTestSupport
import IngestSupport

@Suite struct GzipTests {
    /// Deterministic, moderately compressible bytes (text-like records).
    static func sample(_ count: Int, seed: UInt64 = 42) -> [UInt8] {
        var state = seed
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let line = "sensor-\(state >> 60) temp=\((state >> 40) & 0xFF) wind=\((state >> 20) & 0x1F)\n"
            out.append(contentsOf: line.utf8.prefix(count - out.count))
        }
        return out
    }

    static func tempDir() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func run(_ path: String, _ args: [String]) throws -> (Int32, Data) {
        let result = try runProcess(path, args, timeout: 60)
        return (result.status, Data(result.outputBytes))
    }

    @Test(arguments: [0, 1, 100, 70_000, 1_000_000])
    func roundTripsAtEveryLevel(size: Int) throws {
        let input = Self.sample(size)
        for level in [0, 1, 6, 9] {
            let packed = try Gzip.compress(input, level: level)
            #expect(packed.prefix(2) == [0x1f, 0x8b])
            #expect(try Gzip.decompress(packed) == input)
        }
    }

    /// Realm's sync protocol compresses uploads as zlib (RFC 1950) streams.
    @Test(arguments: [0, 100, 70_000])
    func zlibRoundTripsAndIsNotGzip(size: Int) throws {
        let input = Self.sample(size)
        let packed = try Gzip.compress(input, level: 6, wrapper: .zlib)
        #expect(packed.first == 0x78)
        #expect(try Gzip.decompress(packed, wrapper: .zlib) == input)
        // Each inflater reads its own wrapper only.
        #expect(throws: GzipError.self) { try Gzip.decompress(packed) }
        #expect(throws: GzipError.self) { try Gzip.decompress(try Gzip.compress(input), wrapper: .zlib) }
        // Python's zlib (a reference zlib stream): "hello" at level 6.
        #expect(
            try Gzip.decompress(
                [0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15],
                wrapper: .zlib) == Array("hello".utf8))
    }

    @Test func systemGzipReadsOurOutputAndWeReadItsOutput() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip") || FileManager.default.isExecutableFile(atPath: "/bin/gzip")
        else { return }
        let gzip = FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip") ? "/usr/bin/gzip" : "/bin/gzip"
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = Self.sample(300_000)
        let ours = dir.appendingPathComponent("ours.gz")
        try Data(try Gzip.compress(input, level: 1)).write(to: ours)
        let (status, out) = try Self.run(gzip, ["-dc", ours.path])
        #expect(status == 0)
        #expect([UInt8](out) == input)

        let plain = dir.appendingPathComponent("plain.txt")
        try Data(input).write(to: plain)
        let (status2, theirs) = try Self.run(gzip, ["-c", "-9", plain.path])
        #expect(status2 == 0)
        #expect(try Gzip.decompress([UInt8](theirs)) == input)
    }

    @Test func concatenatedMembersDecompressAsOneStream() throws {
        let a = Self.sample(5_000, seed: 1), b = Self.sample(7_000, seed: 2)
        let joined = try Gzip.compress(a) + Gzip.compress(b, level: 9)
        #expect(try Gzip.decompress(joined) == a + b)
    }

    @Test func streamingWithTinyChunksMatches() throws {
        let input = Self.sample(200_000)
        let packed = try Gzip.compress(input, level: 6)
        let inflater = try GzipInflater()
        var out: [UInt8] = []
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 333, alignment: 1)
        defer { scratch.deallocate() }
        var offset = 0
        var rounds = 0
        try packed.withUnsafeBytes { raw in
            while rounds < 10_000_000 {
                rounds += 1
                let end = min(offset + 17, raw.count)
                let (consumed, produced) = try inflater.inflate(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), into: scratch)
                out.append(contentsOf: scratch[..<produced])
                offset += consumed
                if offset == raw.count && produced == 0 { break }
            }
        }
        try inflater.finish()
        #expect(out == input)
    }

    @Test func everyTruncationIsReportedNeverCrashes() throws {
        let packed = try Gzip.compress(Self.sample(3_000))
        for cut in 0..<packed.count {
            do {
                _ = try Gzip.decompress(Array(packed[..<cut]))
                Issue.record("a prefix of \(cut) bytes decompressed")
            } catch let error as GzipError {
                #expect(error.code == .truncated || error.code == .corrupt)
            }
        }
    }

    @Test func flippedBytesAreCorruptNotWrongData() throws {
        let input = Self.sample(20_000)
        let packed = try Gzip.compress(input)
        var rejected = 0
        for position in stride(from: 10, to: packed.count, by: 7) {
            var bad = packed
            bad[position] ^= 0x5A
            do {
                let out = try Gzip.decompress(bad)
                // The CRC-32 in the trailer guarantees a bit flip never yields silently wrong bytes.
                #expect(out == input)
            } catch let error as GzipError {
                #expect(error.code == .corrupt || error.code == .truncated)
                rejected += 1
            }
        }
        #expect(rejected > 0)
    }

    @Test func trailingGarbageIsCorrupt() throws {
        let packed = try Gzip.compress(Self.sample(1_000)) + Array("garbage".utf8)
        #expect { try Gzip.decompress(packed) } throws: { ($0 as? GzipError)?.code == .corrupt }
    }

    @Test func bombsHitTheRatioAndSizeLimits() throws {
        let zeros = [UInt8](repeating: 0, count: 50 << 20)
        let bomb = try Gzip.compress(zeros, level: 9)
        #expect(bomb.count < 100_000)
        #expect { try Gzip.decompress(bomb, limits: GzipLimits(maxOutputBytes: .max, maxRatio: 200)) } throws: {
            ($0 as? GzipError)?.code == .limitExceeded
        }
        #expect { try Gzip.decompress(bomb, limits: GzipLimits(maxOutputBytes: 1 << 20, maxRatio: .max)) } throws: {
            ($0 as? GzipError)?.code == .limitExceeded
        }
        // Within limits the same data is accepted.
        let small = try Gzip.compress([UInt8](repeating: 0, count: 500_000))
        #expect(try Gzip.decompress(small, limits: GzipLimits(maxOutputBytes: 1 << 20, maxRatio: 200)).count == 500_000)
    }

    @Test func emptyInputIsTruncated() {
        #expect { try Gzip.decompress([]) } throws: { ($0 as? GzipError)?.code == .truncated }
    }

    @Test func crc32MatchesKnownValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        let a = Array("hello ".utf8), b = Array("world".utf8)
        #expect(b.withUnsafeBytes { CRC32.update(CRC32.checksum(a), $0) } == CRC32.checksum(a + b))
    }

    /// Inflates `packed` fed `chunk` bytes at a time; the output, or the
    /// error, and how many trailers the inflater checked itself.
    static func inflate(_ packed: [UInt8], chunk: Int) -> (Result<[UInt8], GzipError>, checkedHere: Int) {
        guard let inflater = try? GzipInflater() else { return (.failure(GzipError(code: .zlibFailure, message: "init")), 0) }
        var out: [UInt8] = []
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { scratch.deallocate() }
        do {
            try packed.withUnsafeBytes { raw in
                var offset = 0
                var rounds = 0
                while rounds < 10_000_000 {
                    rounds += 1
                    let end = min(offset + chunk, raw.count)
                    let (consumed, produced) = try inflater.inflate(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), into: scratch)
                    out.append(contentsOf: scratch[..<produced])
                    offset += consumed
                    if offset == raw.count && produced == 0 { break }
                }
            }
            try inflater.finish()
        } catch let error as GzipError {
            return (.failure(error), inflater.trailersCheckedHere)
        } catch {
            return (.failure(GzipError(code: .zlibFailure, message: "\(error)")), inflater.trailersCheckedHere)
        }
        return (.success(out), inflater.trailersCheckedHere)
    }

    /// A gzip member with a header CRC (FHCRC) around `packed`'s deflate data.
    static func withHeaderCRC(_ packed: [UInt8]) -> [UInt8] {
        var header = Array(packed[0..<10])
        header[3] |= 0x02
        let crc = CRC32.checksum(header)
        return header + [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF)] + packed[10...]
    }

    @Test func everyMembersTrailerIsChecked() throws {
        let a = Self.sample(70_000, seed: 3), b = Self.sample(5_000, seed: 4)
        let joined = try Gzip.compress(a) + Gzip.compress(b, level: 9)
        let secondTrailer = joined.count - 8
        // Byte 0 of each field: the first member's CRC, the second's CRC, the second's length.
        let firstTrailer = try Gzip.compress(a).count - 8
        let cases: [(position: Int, detail: String)] = [
            (firstTrailer, "incorrect data check"), (secondTrailer, "incorrect data check"),
            (secondTrailer + 4, "incorrect length check"),
        ]
        // Whole (the inflater checks the trailers when the CRC folds) and one
        // byte at a time (each member starts with fewer than 4 bytes at hand,
        // so zlib checks): the same output, the same errors.
        // In pieces of 17 bytes the inflater checks too, with the trailers
        // split across calls.
        let whole = Self.inflate(joined, chunk: joined.count)
        let pieces = Self.inflate(joined, chunk: 17)
        let bytewise = Self.inflate(joined, chunk: 1)
        #expect(try whole.0.get() == a + b)
        #expect(try pieces.0.get() == a + b)
        #expect(try bytewise.0.get() == a + b)
        #expect(whole.checkedHere == (CRC32.usesFolding ? 2 : 0))
        #expect(pieces.checkedHere == whole.checkedHere)
        #expect(bytewise.checkedHere == 0)
        for (position, detail) in cases {
            var bad = joined
            bad[position] ^= 0x01
            let (zlibs, checkedByZlib) = Self.inflate(bad, chunk: 1)
            #expect(checkedByZlib == 0)
            for chunk in [bad.count, 17] {
                let (mine, _) = Self.inflate(bad, chunk: chunk)
                guard case .failure(let error) = mine, case .failure(let reference) = zlibs else {
                    Issue.record("a changed trailer byte at \(position) was accepted (pieces of \(chunk))")
                    continue
                }
                #expect(error.code == .corrupt)
                #expect(error.zlibCode == reference.zlibCode)
                #expect(error.message == reference.message)
                #expect(error.message.hasSuffix(detail))
            }
        }
    }

    @Test func headerCRCIsCheckedByZlib() throws {
        let input = Self.sample(20_000)
        let member = Self.withHeaderCRC(try Gzip.compress(input))
        let (good, checkedHere) = Self.inflate(member, chunk: member.count)
        #expect(try good.get() == input)
        #expect(checkedHere == 0)
        // A wrong header CRC, and a wrong trailer CRC, are still found.
        for position in [10, member.count - 8] {
            var bad = member
            bad[position] ^= 0x01
            #expect { try Gzip.decompress(bad) } throws: { ($0 as? GzipError)?.code == .corrupt }
        }
    }

    @Test func aFailedTrailerCheckStaysFailed() throws {
        var packed = try Gzip.compress(Self.sample(3_000))
        packed[packed.count - 8] ^= 0x01
        let inflater = try GzipInflater()
        var out: [UInt8] = []
        var messages: [String] = []
        for _ in 0..<2 {
            do {
                try packed.withUnsafeBytes { try inflater.inflate($0, appendingTo: &out) }
                Issue.record("a changed CRC was accepted")
            } catch let error as GzipError {
                #expect(error.code == .corrupt)
                messages.append(error.message)
            }
        }
        #expect(messages.count == 2 && messages[0] == messages[1])
        #expect { try inflater.finish() } throws: { ($0 as? GzipError)?.code == .truncated }
    }

    @Test func invalidLevelIsRejected() {
        #expect { try GzipDeflater(level: 10) } throws: { ($0 as? GzipError)?.code == .invalidArgument }
    }
}
