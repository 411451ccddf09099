import Foundation
import Testing
@testable import IngestSupport

/// The project's own deflate encoder (level 1 of the segment store): every
/// output must inflate with zlib to the input, whatever the data and
/// however it is fed.
@Suite struct FastDeflaterTests {
    /// `count` bytes of one of four kinds: random (stored blocks), a short
    /// period with rare changes (long matches), a four-letter alphabet
    /// (literals, short matches) and text-like lines.
    static func data(_ kind: Int, _ count: Int, seed: UInt64 = 7) -> [UInt8] {
        var state = seed
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        switch kind {
        case 0: return (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
        case 1: return (0..<count).map { i in UInt8(i % 7) &+ (next() % 500 == 0 ? 1 : 0) }
        case 2: return (0..<count).map { _ in UInt8(ascii: "a") + UInt8(next() % 4) }
        default: return GzipTests.sample(count, seed: seed)
        }
    }

    /// Compresses `input` fed in pieces of `piece` bytes.
    static func compress(_ input: [UInt8], piece: Int) throws -> [UInt8] {
        let deflater = FastDeflater()
        var out: [UInt8] = []
        try input.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = min(piece, raw.count - offset)
                try deflater.compress(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + n)]), appendingTo: &out)
                offset += n
            }
        }
        try deflater.finish(appendingTo: &out)
        return out
    }

    static func inflate(_ gzip: [UInt8]) throws -> [UInt8] {
        try Gzip.decompress(gzip, limits: GzipLimits(maxOutputBytes: 64 << 20, maxRatio: 1_000_000))
    }

    @Test func everySmallSizeRoundTrips() throws {
        for size in 0...300 {
            for kind in 0..<4 {
                let input = Self.data(kind, size, seed: UInt64(size))
                let packed = try Self.compress(input, piece: max(1, size))
                #expect(packed.prefix(3) == [0x1F, 0x8B, 8])
                #expect(try Self.inflate(packed) == input, "kind \(kind), \(size) bytes")
            }
        }
    }

    /// Sizes around the block (65,535 bytes), the window (32 KiB) and the
    /// internal buffer, each fed whole, in odd pieces and byte by byte where cheap.
    @Test(arguments: [32_767, 32_768, 32_769, 65_534, 65_535, 65_536, 65_537, 131_070, 294_912, 294_913, 1_000_003])
    func blockAndWindowBoundariesRoundTrip(size: Int) throws {
        for kind in 0..<4 {
            let input = Self.data(kind, size)
            for piece in [size, 4_099, 256 << 10] {
                #expect(try Self.inflate(Self.compress(input, piece: piece)) == input, "kind \(kind), piece \(piece)")
            }
        }
        let input = Self.data(3, min(size, 70_000))
        #expect(try Self.inflate(Self.compress(input, piece: 1)) == input)
    }

    @Test func incompressibleDataBecomesStoredBlocks() throws {
        let input = Self.data(0, 1 << 20)
        let packed = try Self.compress(input, piece: 256 << 10)
        // Stored blocks: 5 bytes per 65,535, plus the gzip header, trailer and the final block's bits.
        #expect(packed.count <= input.count + 5 * (input.count / 65_535 + 1) + 18 + 2)
        #expect(try Self.inflate(packed) == input)
    }

    /// Byte frequencies that follow the Fibonacci numbers make a Huffman tree
    /// deeper than deflate's 15 bits; the encoder must limit the code lengths.
    @Test func skewedFrequenciesGetLengthLimitedCodes() throws {
        var counts = [1, 1]
        while counts.count < 24 { counts.append(counts[counts.count - 1] + counts[counts.count - 2]) }
        var input: [UInt8] = []
        for (symbol, count) in counts.enumerated() { input += [UInt8](repeating: UInt8(symbol * 7 + 3), count: count) }
        // Shuffled, so that the bytes are literals rather than matches.
        var state: UInt64 = 99
        for i in stride(from: input.count - 1, to: 0, by: -1) {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            input.swapAt(i, Int((state >> 33) % UInt64(i + 1)))
        }
        let packed = try Self.compress(Array(input.prefix(65_535)), piece: 65_535)
        #expect(try Self.inflate(packed) == Array(input.prefix(65_535)))
        #expect(try Self.inflate(Self.compress(input, piece: 10_000)) == input)
    }

    /// Fibonacci frequencies give the deepest Huffman trees: the lengths
    /// must stay within the limit and form a complete code (Kraft sum 1),
    /// as zlib's inflate requires.
    @Test(arguments: [(30, 15), (19, 7), (286, 15), (2, 15), (1, 15), (0, 15)])
    func codeLengthsAreLimitedAndComplete(symbols: Int, maxBits: Int) {
        let encoder = DeflateBlockEncoder()
        defer { encoder.deallocate() }
        let frequencies = UnsafeMutablePointer<UInt32>.allocate(capacity: symbols + 2)
        let lengths = UnsafeMutablePointer<UInt8>.allocate(capacity: symbols + 2)
        frequencies.initialize(repeating: 0, count: symbols + 2)
        defer {
            frequencies.deallocate()
            lengths.deallocate()
        }
        var a: UInt32 = 1
        var b: UInt32 = 1
        for symbol in 0..<symbols {
            frequencies[symbol] = symbol < 40 ? a : 1
            (a, b) = (b, a &+ b)
        }
        encoder.buildLengths(frequencies, count: max(symbols, 2), maxBits: maxBits, lengths: lengths)
        var kraft = 0.0
        for symbol in 0..<max(symbols, 2) {
            let length = Int(lengths[symbol])
            #expect(length <= maxBits)
            if symbols >= 2 { #expect(length >= 1, "symbol \(symbol) is used and has no code") }
            if length > 0 { kraft += 1 / Double(1 << length) }
        }
        #expect(kraft == 1)
    }

    @Test func compressesLikeZlibLevel1() throws {
        let input = Self.data(3, 4 << 20)
        let fast = try Self.compress(input, piece: 256 << 10)
        let zlib = try Gzip.compress(input, level: 1)
        #expect(try Self.inflate(fast) == input)
        #expect(Double(fast.count) <= Double(zlib.count) * 1.15, "\(fast.count) bytes against zlib's \(zlib.count)")
    }

    @Test func theSystemGzipReadsIt() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip") || FileManager.default.isExecutableFile(atPath: "/bin/gzip")
        else { return }
        let gzip = FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip") ? "/usr/bin/gzip" : "/bin/gzip"
        let directory = try GzipTests.tempDir()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = Self.data(3, 300_000)
        let file = directory.appendingPathComponent("fast.gz")
        try Data(Self.compress(input, piece: 65_536)).write(to: file)
        let (status, output) = try GzipTests.run(gzip, ["-dc", file.path])
        #expect(status == 0)
        #expect(Array(output) == input)
    }

    @Test func finishTwiceAndCompressAfterFinish() throws {
        let deflater = FastDeflater()
        var out: [UInt8] = []
        try deflater.compress(Array("hello".utf8), appendingTo: &out)
        try deflater.finish(appendingTo: &out)
        let once = out
        try deflater.finish(appendingTo: &out)
        #expect(out == once)
        #expect(throws: GzipError.self) { try deflater.compress(Array("more".utf8), appendingTo: &out) }
        #expect(try Self.inflate(out) == Array("hello".utf8))
    }

    @Test func level1MakesTheProjectsEncoderAndOtherLevelsZlib() throws {
        #expect(try Gzip.makeCompressor(level: 1) is FastDeflater)
        #expect(try Gzip.makeCompressor(level: 6) is GzipDeflater)
        #expect(throws: GzipError.self) { try Gzip.makeCompressor(level: 10) }
    }
}

/// CRC-32 by carry-less multiplication against zlib's.
@Suite struct CRC32FoldingTests {
    @Test func foldingAgreesWithZlibAtEveryLengthAndAlignment() {
        let bytes = FastDeflaterTests.data(0, 2_100)
        bytes.withUnsafeBytes { raw in
            for offset in 0..<16 {
                for count in 0...2_048 {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)])
                    #expect(CRC32.update(0xDEAD_BEEF, slice) == CRC32.zlibUpdate(0xDEAD_BEEF, slice))
                    if CRC32.update(0, slice) != CRC32.zlibUpdate(0, slice) {
                        Issue.record("offset \(offset), \(count) bytes")
                        return
                    }
                }
            }
        }
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        let letters = [UInt8](repeating: 0x61, count: 1_000)
        #expect(CRC32.checksum(letters) == letters.withUnsafeBytes { CRC32.zlibUpdate(0, $0) })
    }

    /// `DATAINGEST_PORTABLE=1` forces zlib's tables; otherwise an x86-64 CPU
    /// with PCLMULQDQ folds.
    @Test func theChoiceFollowsTheSwitchAndTheCPU() {
        if PortableFallbacks.areForced {
            #expect(!CRC32.usesFolding)
        } else {
            #if arch(x86_64)
            let hasFolding = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.contains(" pclmulqdq") ?? false
            #expect(CRC32.usesFolding == hasFolding)
            #else
            #expect(!CRC32.usesFolding)
            #endif
        }
    }
}
