/// The symbol tables of deflate (RFC 1951, 3.2.5): which length and
/// distance symbols a match uses and their extra bits, and the static
/// Huffman code. Built once per process; never changed after.
// @unchecked Sendable: the pointers are filled in `init` and only read after.
final class DeflateTables: @unchecked Sendable {
    static let shared = DeflateTables()
    static let litlenSymbols = 286
    static let distanceSymbols = 30

    /// By match length (3...258): its symbol minus 257 (0...28).
    let lengthSymbol: UnsafeMutablePointer<UInt8>
    let lengthBase: UnsafeMutablePointer<UInt16>
    let lengthExtra: UnsafeMutablePointer<UInt8>
    /// By `distance - 1` below 256, and by `256 + (distance - 1) >> 7` above: the distance symbol (0...29).
    let distanceSymbol: UnsafeMutablePointer<UInt8>
    let distanceBase: UnsafeMutablePointer<UInt16>
    let distanceExtra: UnsafeMutablePointer<UInt8>
    /// The static code (BTYPE 01): code lengths of the 288 literal/length and 30 distance symbols.
    let staticLitlenLengths: UnsafeMutablePointer<UInt8>
    let staticDistanceLengths: UnsafeMutablePointer<UInt8>

    private init() {
        lengthSymbol = .allocate(capacity: 259)
        lengthSymbol.initialize(repeating: 0, count: 259)
        lengthBase = .allocate(capacity: 29)
        lengthExtra = .allocate(capacity: 29)
        let lengthExtraBits: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
        var base = 3
        for symbol in 0..<29 {
            lengthExtra[symbol] = lengthExtraBits[symbol]
            lengthBase[symbol] = UInt16(symbol == 28 ? 258 : base)
            if symbol < 28 {
                for length in base..<(base + (1 << Int(lengthExtraBits[symbol]))) where length <= 258 {
                    lengthSymbol[length] = UInt8(symbol)
                }
                base += 1 << Int(lengthExtraBits[symbol])
            }
        }
        lengthSymbol[258] = 28  // 258 has its own symbol (285), not 284 with extra bits 31
        distanceBase = .allocate(capacity: 30)
        distanceExtra = .allocate(capacity: 30)
        distanceSymbol = .allocate(capacity: 512)
        distanceSymbol.initialize(repeating: 0, count: 512)
        var distance = 1
        for symbol in 0..<30 {
            let extra = symbol < 4 ? 0 : symbol / 2 - 1
            distanceExtra[symbol] = UInt8(extra)
            distanceBase[symbol] = UInt16(distance)
            for d in distance..<(distance + (1 << extra)) {
                let index = d - 1 < 256 ? d - 1 : 256 + ((d - 1) >> 7)
                distanceSymbol[index] = UInt8(symbol)
            }
            distance += 1 << extra
        }
        staticLitlenLengths = .allocate(capacity: 288)
        for symbol in 0..<288 {
            staticLitlenLengths[symbol] = symbol < 144 ? 8 : symbol < 256 ? 9 : symbol < 280 ? 7 : 8
        }
        staticDistanceLengths = .allocate(capacity: 30)
        staticDistanceLengths.initialize(repeating: 5, count: 30)
    }
}

/// Writes deflate blocks from a block's tokens (literals and matches, see
/// ``FastDeflater``): chooses the smallest of a dynamic Huffman block, a
/// static one and a stored one, and packs the bits into a scratch buffer
/// that ``drain(into:)`` appends to the caller's output. Owned by one
/// ``FastDeflater``, which calls ``deallocate()``.
struct DeflateBlockEncoder {
    /// Symbol counts of the current block, filled in by the match finder.
    let litlenFrequencies: UnsafeMutablePointer<UInt32>
    let distanceFrequencies: UnsafeMutablePointer<UInt32>
    private let litlenLengths: UnsafeMutablePointer<UInt8>
    private let litlenCodes: UnsafeMutablePointer<UInt32>
    private let distanceLengths: UnsafeMutablePointer<UInt8>
    private let distanceCodes: UnsafeMutablePointer<UInt32>
    private let staticLitlenCodes: UnsafeMutablePointer<UInt32>
    private let staticDistanceCodes: UnsafeMutablePointer<UInt32>
    /// The code-length alphabet (19 symbols) and the run-length encoded lengths.
    private let lengthCodeFrequencies: UnsafeMutablePointer<UInt32>
    private let lengthCodeLengths: UnsafeMutablePointer<UInt8>
    private let lengthCodeCodes: UnsafeMutablePointer<UInt32>
    private let runSymbols: UnsafeMutablePointer<UInt16>
    /// Scratch of the Huffman construction.
    private let huffmanKeys: UnsafeMutablePointer<UInt64>
    private let huffmanWeights: UnsafeMutablePointer<UInt32>
    private let huffmanParents: UnsafeMutablePointer<Int16>
    private let huffmanDepths: UnsafeMutablePointer<UInt8>
    /// The packed output of the blocks since the last `drain`.
    private let scratch: UnsafeMutablePointer<UInt8>
    private var out: UnsafeMutablePointer<UInt8>
    private var bits: UInt64 = 0
    private var bitCount = 0

    /// A stored block of 65,535 bytes and its header, with room for the
    /// 8-byte stores of the bit writer.
    private static let scratchBytes = 65_535 + 1_024

    static let lengthCodeOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    init() {
        litlenFrequencies = .allocate(capacity: 288)
        litlenFrequencies.initialize(repeating: 0, count: 288)
        distanceFrequencies = .allocate(capacity: 32)
        distanceFrequencies.initialize(repeating: 0, count: 32)
        litlenLengths = .allocate(capacity: 288)
        litlenLengths.initialize(repeating: 0, count: 288)
        litlenCodes = .allocate(capacity: 288)
        litlenCodes.initialize(repeating: 0, count: 288)
        distanceLengths = .allocate(capacity: 32)
        distanceLengths.initialize(repeating: 0, count: 32)
        distanceCodes = .allocate(capacity: 32)
        distanceCodes.initialize(repeating: 0, count: 32)
        staticLitlenCodes = .allocate(capacity: 288)
        staticDistanceCodes = .allocate(capacity: 32)
        lengthCodeFrequencies = .allocate(capacity: 19)
        lengthCodeLengths = .allocate(capacity: 19)
        lengthCodeCodes = .allocate(capacity: 19)
        runSymbols = .allocate(capacity: 320)
        huffmanKeys = .allocate(capacity: 288)
        huffmanWeights = .allocate(capacity: 2 * 288)
        huffmanParents = .allocate(capacity: 2 * 288)
        huffmanDepths = .allocate(capacity: 2 * 288)
        scratch = .allocate(capacity: Self.scratchBytes + 8)
        out = scratch
        let tables = DeflateTables.shared
        Self.canonicalCodes(lengths: tables.staticLitlenLengths, count: 288, codes: staticLitlenCodes)
        Self.canonicalCodes(lengths: tables.staticDistanceLengths, count: 30, codes: staticDistanceCodes)
    }

    func deallocate() {
        litlenFrequencies.deallocate()
        distanceFrequencies.deallocate()
        litlenLengths.deallocate()
        litlenCodes.deallocate()
        distanceLengths.deallocate()
        distanceCodes.deallocate()
        staticLitlenCodes.deallocate()
        staticDistanceCodes.deallocate()
        lengthCodeFrequencies.deallocate()
        lengthCodeLengths.deallocate()
        lengthCodeCodes.deallocate()
        runSymbols.deallocate()
        huffmanKeys.deallocate()
        huffmanWeights.deallocate()
        huffmanParents.deallocate()
        huffmanDepths.deallocate()
        scratch.deallocate()
    }

    // MARK: - Bits

    /// Adds `count` bits (at most 32 here) of `value`, least significant first.
    @inline(__always)
    private mutating func put(_ value: UInt32, _ count: Int) {
        bits |= UInt64(value) << UInt64(bitCount)
        bitCount += count
        if bitCount >= 32 { flushBytes() }
    }

    /// Stores the whole bytes of the bit buffer.
    @inline(__always)
    private mutating func flushBytes() {
        UnsafeMutableRawPointer(out).storeBytes(of: bits.littleEndian, as: UInt64.self)
        let bytes = bitCount >> 3
        out += bytes
        bits = bytes == 8 ? 0 : bits &>> UInt64(bytes * 8)
        bitCount &= 7
    }

    /// Pads the last partial byte with zero bits.
    mutating func flushToByte() {
        flushBytes()
        if bitCount > 0 {
            out.pointee = UInt8(truncatingIfNeeded: bits)
            out += 1
            bits = 0
            bitCount = 0
        }
    }

    /// Four bytes, little-endian, at a byte boundary (the gzip trailer).
    mutating func writeLE32(_ value: UInt32) {
        UnsafeMutableRawPointer(out).storeBytes(of: value.littleEndian, as: UInt32.self)
        out += 4
    }

    /// Appends the whole bytes written so far to `output`.
    mutating func drain(into output: inout [UInt8]) {
        let count = out - scratch
        guard count > 0 else { return }
        output.append(contentsOf: UnsafeBufferPointer(start: scratch, count: count))
        out = scratch
    }

    // MARK: - Blocks

    /// Writes one block of `count` tokens that stand for `raw`.
    mutating func writeBlock(tokens: UnsafePointer<UInt32>, count: Int, raw: UnsafeBufferPointer<UInt8>, final: Bool) {
        let tables = DeflateTables.shared
        buildLengths(litlenFrequencies, count: DeflateTables.litlenSymbols, maxBits: 15, lengths: litlenLengths)
        buildLengths(distanceFrequencies, count: DeflateTables.distanceSymbols, maxBits: 15, lengths: distanceLengths)
        var litlenCount = 286
        while litlenCount > 257 && litlenLengths[litlenCount - 1] == 0 { litlenCount -= 1 }
        var distanceCount = 30
        while distanceCount > 1 && distanceLengths[distanceCount - 1] == 0 { distanceCount -= 1 }
        let runs = runLengthEncode(litlenCount: litlenCount, distanceCount: distanceCount)
        buildLengths(lengthCodeFrequencies, count: 19, maxBits: 7, lengths: lengthCodeLengths)
        var lengthCodeCount = 19
        while lengthCodeCount > 4 && lengthCodeLengths[Self.lengthCodeOrder[lengthCodeCount - 1]] == 0 { lengthCodeCount -= 1 }

        // Sizes in bits of the three kinds of block.
        var extraBits = 0
        var dynamicBits = 3 + 5 + 5 + 4 + 3 * lengthCodeCount
        var staticBits = 3
        for symbol in 0..<286 {
            let f = Int(litlenFrequencies[symbol])
            guard f > 0 else { continue }
            dynamicBits += f * Int(litlenLengths[symbol])
            staticBits += f * Int(tables.staticLitlenLengths[symbol])
            if symbol > 256 { extraBits += f * Int(tables.lengthExtra[symbol - 257]) }
        }
        for symbol in 0..<30 {
            let f = Int(distanceFrequencies[symbol])
            guard f > 0 else { continue }
            dynamicBits += f * Int(distanceLengths[symbol])
            staticBits += f * 5
            extraBits += f * Int(tables.distanceExtra[symbol])
        }
        for symbol in 0..<19 {
            dynamicBits += Int(lengthCodeFrequencies[symbol]) * Int(lengthCodeLengths[symbol])
        }
        for k in 0..<runs {
            let s = Int(runSymbols[k] & 0xFF)
            dynamicBits += s == 16 ? 2 : s == 17 ? 3 : s == 18 ? 7 : 0
        }
        dynamicBits += extraBits
        staticBits += extraBits
        let storedBits = 3 + 7 + 32 + 8 * raw.count

        if storedBits <= dynamicBits && storedBits <= staticBits {
            writeStored(raw, final: final)
        } else if staticBits <= dynamicBits {
            put(final ? 1 : 0, 1)
            put(1, 2)
            writeTokens(
                tokens, count: count, litlenLengths: tables.staticLitlenLengths, litlenCodes: staticLitlenCodes,
                distanceLengths: tables.staticDistanceLengths, distanceCodes: staticDistanceCodes)
        } else {
            Self.canonicalCodes(lengths: litlenLengths, count: 286, codes: litlenCodes)
            Self.canonicalCodes(lengths: distanceLengths, count: 30, codes: distanceCodes)
            Self.canonicalCodes(lengths: lengthCodeLengths, count: 19, codes: lengthCodeCodes)
            put(final ? 1 : 0, 1)
            put(2, 2)
            put(UInt32(litlenCount - 257), 5)
            put(UInt32(distanceCount - 1), 5)
            put(UInt32(lengthCodeCount - 4), 4)
            for k in 0..<lengthCodeCount { put(UInt32(lengthCodeLengths[Self.lengthCodeOrder[k]]), 3) }
            for k in 0..<runs {
                let symbol = Int(runSymbols[k] & 0xFF)
                let extra = UInt32(runSymbols[k] >> 8)
                put(lengthCodeCodes[symbol], Int(lengthCodeLengths[symbol]))
                switch symbol {
                case 16: put(extra, 2)
                case 17: put(extra, 3)
                case 18: put(extra, 7)
                default: break
                }
            }
            writeTokens(
                tokens, count: count, litlenLengths: litlenLengths, litlenCodes: litlenCodes,
                distanceLengths: distanceLengths, distanceCodes: distanceCodes)
        }
    }

    private mutating func writeStored(_ raw: UnsafeBufferPointer<UInt8>, final: Bool) {
        put(final ? 1 : 0, 1)
        put(0, 2)
        flushToByte()
        let length = UInt16(raw.count)
        UnsafeMutableRawPointer(out).storeBytes(of: length.littleEndian, as: UInt16.self)
        UnsafeMutableRawPointer(out).storeBytes(of: (~length).littleEndian, toByteOffset: 2, as: UInt16.self)
        out += 4
        if let base = raw.baseAddress, raw.count > 0 {
            out.update(from: base, count: raw.count)
            out += raw.count
        }
    }

    /// The Huffman-coded literals and matches, then the end-of-block symbol.
    private mutating func writeTokens(
        _ tokens: UnsafePointer<UInt32>, count: Int, litlenLengths: UnsafePointer<UInt8>, litlenCodes: UnsafePointer<UInt32>,
        distanceLengths: UnsafePointer<UInt8>, distanceCodes: UnsafePointer<UInt32>
    ) {
        let tables = DeflateTables.shared
        let lengthSymbol = tables.lengthSymbol
        let lengthBase = tables.lengthBase
        let lengthExtra = tables.lengthExtra
        let distanceSymbol = tables.distanceSymbol
        let distanceBase = tables.distanceBase
        let distanceExtra = tables.distanceExtra
        flushBytes()  // at most 7 bits left, so that a token's 48 bits fit
        var bits = self.bits
        var bitCount = self.bitCount
        var out = self.out
        for k in 0..<count {
            let token = tokens[k]
            if token < 1 << 31 {
                let symbol = Int(token)
                bits |= UInt64(litlenCodes[symbol]) &<< UInt64(bitCount)
                bitCount &+= Int(litlenLengths[symbol])
            } else {
                let length = Int((token >> 15) & 0x1FF)
                let d = Int(token & 0x7FFF)
                let ls = Int(lengthSymbol[length])
                let lsymbol = 257 &+ ls
                bits |= UInt64(litlenCodes[lsymbol]) &<< UInt64(bitCount)
                bitCount &+= Int(litlenLengths[lsymbol])
                bits |= UInt64(length &- Int(lengthBase[ls])) &<< UInt64(bitCount)
                bitCount &+= Int(lengthExtra[ls])
                let ds = Int(d < 256 ? distanceSymbol[d] : distanceSymbol[256 &+ (d >> 7)])
                bits |= UInt64(distanceCodes[ds]) &<< UInt64(bitCount)
                bitCount &+= Int(distanceLengths[ds])
                bits |= UInt64(d &+ 1 &- Int(distanceBase[ds])) &<< UInt64(bitCount)
                bitCount &+= Int(distanceExtra[ds])
            }
            // At most 48 bits were added to at most 7: store the whole bytes.
            UnsafeMutableRawPointer(out).storeBytes(of: bits.littleEndian, as: UInt64.self)
            let bytes = bitCount &>> 3
            out += bytes
            bits = bytes == 8 ? 0 : bits &>> UInt64(bytes &* 8)
            bitCount &= 7
        }
        self.bits = bits
        self.bitCount = bitCount
        self.out = out
        put(litlenCodes[256], Int(litlenLengths[256]))
    }

    /// Run-length encodes the code lengths of both alphabets with the
    /// symbols 16 (repeat the previous 3-6 times), 17 (3-10 zeros) and 18
    /// (11-138 zeros) into `runSymbols` (symbol | extra value << 8), and
    /// counts the symbols. Returns the number of entries.
    private mutating func runLengthEncode(litlenCount: Int, distanceCount: Int) -> Int {
        lengthCodeFrequencies.update(repeating: 0, count: 19)
        let total = litlenCount + distanceCount
        func length(_ i: Int) -> UInt8 { i < litlenCount ? litlenLengths[i] : distanceLengths[i - litlenCount] }
        var n = 0
        func emit(_ symbol: Int, _ extra: Int = 0) {
            runSymbols[n] = UInt16(symbol) | UInt16(extra) << 8
            n += 1
            lengthCodeFrequencies[symbol] += 1
        }
        var i = 0
        while i < total {
            let value = length(i)
            var run = 1
            while i + run < total && length(i + run) == value { run += 1 }
            i += run
            if value == 0 {
                while run >= 11 {
                    let k = min(run, 138)
                    emit(18, k - 11)
                    run -= k
                }
                if run >= 3 {
                    emit(17, run - 3)
                    run = 0
                }
            } else {
                emit(Int(value))
                run -= 1
                while run >= 3 {
                    let k = min(run, 6)
                    emit(16, k - 3)
                    run -= k
                }
            }
            while run > 0 {
                emit(Int(value))
                run -= 1
            }
        }
        return n
    }

    // MARK: - Huffman codes

    /// Code lengths of at most `maxBits` for the `count` symbols by their
    /// frequencies (0 for unused symbols). Fewer than two used symbols get
    /// two codes of one bit, so that every code is complete (zlib's inflate
    /// refuses incomplete literal/length codes). When the Huffman tree is
    /// deeper than `maxBits`, the frequencies are halved (never to 0) and
    /// the tree built again: equal frequencies give a balanced tree, which
    /// fits, so this ends.
    func buildLengths(_ frequencies: UnsafePointer<UInt32>, count: Int, maxBits: Int, lengths: UnsafeMutablePointer<UInt8>) {
        lengths.update(repeating: 0, count: count)
        var used = 0
        for symbol in 0..<count where frequencies[symbol] > 0 {
            huffmanKeys[used] = UInt64(frequencies[symbol]) << 16 | UInt64(symbol)
            used += 1
        }
        if used < 2 {
            let only = used == 1 ? Int(huffmanKeys[0] & 0xFFFF) : 0
            lengths[only] = 1
            lengths[only == 0 ? 1 : 0] = 1
            return
        }
        var keys = UnsafeMutableBufferPointer(start: huffmanKeys, count: used)
        keys.sort()
        let weights = huffmanWeights
        let parents = huffmanParents
        let depths = huffmanDepths
        for k in 0..<used { weights[k] = UInt32(truncatingIfNeeded: huffmanKeys[k] >> 16) }
        while true {
            // Two queues: the sorted leaves and the internal nodes, which are made in order of weight.
            var leaf = 0
            var inner = used
            var next = used
            func smallest() -> Int {
                if leaf < used && (inner >= next || weights[leaf] <= weights[inner]) {
                    leaf += 1
                    return leaf - 1
                }
                inner += 1
                return inner - 1
            }
            for _ in 0..<(used - 1) {
                let a = smallest()
                let b = smallest()
                weights[next] = weights[a] + weights[b]
                parents[a] = Int16(next)
                parents[b] = Int16(next)
                next += 1
            }
            let root = 2 * used - 2
            depths[root] = 0
            var deepest = 0
            for node in stride(from: root - 1, through: 0, by: -1) {
                depths[node] = depths[Int(parents[node])] + 1
                if node < used { deepest = max(deepest, Int(depths[node])) }
            }
            if deepest <= maxBits { break }
            for k in 0..<used { weights[k] = (weights[k] + 1) >> 1 }
        }
        for k in 0..<used { lengths[Int(huffmanKeys[k] & 0xFFFF)] = depths[k] }
    }

    /// The canonical code of RFC 1951, 3.2.2, bit-reversed so that it can
    /// be written least significant bit first.
    static func canonicalCodes(lengths: UnsafePointer<UInt8>, count: Int, codes: UnsafeMutablePointer<UInt32>) {
        var lengthCounts = [Int](repeating: 0, count: 16)
        for symbol in 0..<count { lengthCounts[Int(lengths[symbol])] += 1 }
        lengthCounts[0] = 0
        var nextCode = [UInt32](repeating: 0, count: 16)
        var code: UInt32 = 0
        for bits in 1...15 {
            code = (code + UInt32(lengthCounts[bits - 1])) << 1
            nextCode[bits] = code
        }
        for symbol in 0..<count {
            let length = Int(lengths[symbol])
            guard length > 0 else {
                codes[symbol] = 0
                continue
            }
            let value = nextCode[length]
            nextCode[length] += 1
            // Reverse the 16 low bits, then keep the `length` that hold the code.
            var r = value
            r = (r & 0x5555) << 1 | (r >> 1) & 0x5555
            r = (r & 0x3333) << 2 | (r >> 2) & 0x3333
            r = (r & 0x0F0F) << 4 | (r >> 4) & 0x0F0F
            r = (r & 0x00FF) << 8 | (r >> 8) & 0x00FF
            codes[symbol] = r >> UInt32(16 - length)
        }
    }
}
