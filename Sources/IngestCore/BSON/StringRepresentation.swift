import IngestSupport

/// Builds and reads `String`s through their two-word in-memory
/// representation, for the BSON codec's per-field work: building a key of up
/// to 15 bytes this way is two loads and a store instead of a call into
/// `String(unsafeUninitializedCapacity:)`, and reading a long key's bytes
/// needs no retain and release of its storage (Benchmarks/README.md has the
/// instruction counts).
///
/// The representation is the standard library's (`StringObject.swift`): a
/// count-and-flags word, then an object word whose top nibble says what the
/// string is.
/// - A *small* string (at most 15 UTF-8 bytes) holds its bytes inline: bytes
///   0–7 in the first word, 8–14 in the second, whose top byte is the
///   discriminator (immortal, small, and whether all bytes are ASCII) and
///   the count.
/// - A *tail-allocated* large string (native or literal) has its count in
///   the low 48 bits of the first word and its UTF-8 32 bytes past the
///   address in the object word.
/// - An *immortal* string (small, or a literal) has the top bit of the
///   object word set: the runtime neither retains nor releases it. The
///   decoder's interned keys (``BSONKeyCache``) are immortal large strings
///   over bytes that are never freed, like a literal's.
///
/// That layout is checked once per process against strings the standard
/// library made itself (``isVerified``): every small string built here must
/// be bit-for-bit the one the library builds from the same bytes, and every
/// string read here must give its `utf8` bytes. Where that does not hold,
/// callers take their general path, so a different runtime costs speed,
/// never correctness.
enum StringRepresentation {
    /// Whether the layout described above was confirmed on this runtime;
    /// always `false` with `DATAINGEST_PORTABLE=1` (``PortableFallbacks``).
    static let isVerified: Bool = !PortableFallbacks.areForced && verifyLayout()

    /// The longest string kept inline.
    static let smallCapacity = 15

    private static let immortalFlag: UInt64 = 0x8000_0000_0000_0000
    private static let smallFlag: UInt64 = 0x2000_0000_0000_0000
    private static let smallASCIIDiscriminator: UInt64 = 0xE000_0000_0000_0000
    private static let smallDiscriminator: UInt64 = 0xA000_0000_0000_0000
    private static let foreignFlag: UInt64 = 0x1000_0000_0000_0000
    private static let tailAllocatedFlag: UInt64 = 0x1000_0000_0000_0000
    private static let largeCountMask: UInt64 = 0x0000_FFFF_FFFF_FFFF
    /// A literal's count-and-flags bits: ASCII and NFC (both only for
    /// ASCII text), tail-allocated.
    private static let immortalASCIIFlags: UInt64 = 0xD000_0000_0000_0000
    private static let immortalFlags: UInt64 = 0x1000_0000_0000_0000
    private static let addressMask: UInt64 = 0x0FFF_FFFF_FFFF_FFFF
    private static let nativeBias = 32

    /// The low `count` bytes (0...8) of a word set, the rest clear.
    @inline(__always)
    static func lowBytesMask(_ count: Int) -> UInt64 {
        // A smart shift: by 64 it gives 0, which is right for no bytes.
        UInt64.max >> UInt64(truncatingIfNeeded: 64 &- 8 &* count)
    }

    /// A small string of the `count` (at most 15) bytes at `source`, which
    /// must be valid UTF-8; `readable` bytes from `source` on may be read
    /// (16 or more allow two word loads, fewer are copied one by one).
    /// Only after ``isVerified``.
    @inline(__always)
    static func small(utf8 source: UnsafeRawPointer, count: Int, readable: Int) -> String {
        var first: UInt64
        var second: UInt64
        if _fastPath(readable >= 16) {
            first = UInt64(littleEndian: source.loadUnaligned(as: UInt64.self))
            second = UInt64(littleEndian: source.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        } else {
            (first, second) = (0, 0)
            withUnsafeMutableBytes(of: &first) { word in
                for index in 0..<min(count, 8) { word[index] = source.load(fromByteOffset: index, as: UInt8.self) }
            }
            withUnsafeMutableBytes(of: &second) { word in
                for index in 8..<max(count, 8) { word[index &- 8] = source.load(fromByteOffset: index, as: UInt8.self) }
            }
            first = UInt64(littleEndian: first)
            second = UInt64(littleEndian: second)
        }
        first &= lowBytesMask(min(count, 8))
        second &= lowBytesMask(max(count &- 8, 0))
        let isASCII = (first | second) & 0x8080_8080_8080_8080 == 0
        second |= (isASCII ? smallASCIIDiscriminator : smallDiscriminator) | UInt64(truncatingIfNeeded: count) &<< 56
        return string(first, second)
    }

    /// The two words of an immortal string over the `count` (more than 15)
    /// bytes of valid UTF-8 at `address`, which must never be freed or
    /// changed. Only after ``isVerified``.
    @inline(__always)
    static func immortalWords(utf8 address: UnsafeRawPointer, count: Int, isASCII: Bool) -> (UInt64, UInt64) {
        let countAndFlags = UInt64(truncatingIfNeeded: count) | (isASCII ? immortalASCIIFlags : immortalFlags)
        let object = UInt64(UInt(bitPattern: address - nativeBias)) | immortalFlag
        return (countAndFlags, object)
    }

    /// The string whose two words are given, which hold no reference
    /// (small or immortal). Taken (`move()`) out of raw memory rather than
    /// made with `unsafeBitCast`, whose result is a borrowed value that the
    /// caller then retains: a call into the runtime for nothing.
    @inline(__always)
    static func string(_ first: UInt64, _ second: UInt64) -> String {
        withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { raw in
            let base = raw.baseAddress.unsafelyUnwrapped
            base.storeBytes(of: first, as: UInt64.self)
            base.storeBytes(of: second, toByteOffset: 8, as: UInt64.self)
            return base.bindMemory(to: String.self, capacity: 1).move()
        }
    }

    /// The small string of `count` (at most 15) ASCII bytes held in `low`
    /// and `high` (bytes 0–7 and 8–14, every byte past `count` zero). Only
    /// after ``isVerified``.
    @inline(__always)
    static func smallASCII(_ low: UInt64, _ high: UInt64, count: Int) -> String {
        string(low, high | smallASCIIDiscriminator | UInt64(truncatingIfNeeded: count) &<< 56)
    }

    /// The small string of the first `count` (at most 15) bytes of `first`
    /// and `second` (bytes 0–7 and 8–15; the rest are ignored), or nil when
    /// one of those bytes is not ASCII. Only after ``isVerified``.
    @inline(__always)
    static func smallASCII(maskingWords first: UInt64, _ second: UInt64, count: Int) -> String? {
        let low = first & lowBytesMask(min(count, 8))
        let high = second & lowBytesMask(max(count &- 8, 0))
        guard (low | high) & 0x8080_8080_8080_8080 == 0 else { return nil }
        return smallASCII(low, high, count: count)
    }

    /// The two words of a small string (its bytes, the count in the second
    /// word's top byte) or nil when `text` is not small. Only after
    /// ``isVerified``.
    @inline(__always)
    static func smallWords(_ text: borrowing String) -> (first: UInt64, second: UInt64, count: Int)? {
        let (first, second) = words(text)
        return smallWords(first, second)
    }

    /// ``smallWords(_:)`` for a string's two words.
    @inline(__always)
    static func smallWords(_ first: UInt64, _ second: UInt64) -> (first: UInt64, second: UInt64, count: Int)? {
        guard second & smallFlag != 0 else { return nil }
        let count = Int(truncatingIfNeeded: (second &>> 56) & 0x0F)
        return (first, second & 0x00FF_FFFF_FFFF_FFFF, count)
    }

    /// The address and count of a large string's contiguous UTF-8, or nil
    /// when `text` is small or not tail-allocated. `text` must outlive every
    /// use of the address (nothing is retained). Only after ``isVerified``.
    @inline(__always)
    static func largeUTF8(_ text: borrowing String) -> (start: UnsafeRawPointer, count: Int)? {
        largeUTF8(words: words(text))
    }

    /// ``largeUTF8(_:)`` for a string's two words.
    @inline(__always)
    static func largeUTF8(words: (UInt64, UInt64)) -> (start: UnsafeRawPointer, count: Int)? {
        let (countAndFlags, object) = words
        guard object & (smallFlag | foreignFlag) == 0, countAndFlags & tailAllocatedFlag != 0,
            let address = UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: object & addressMask))
        else { return nil }
        return (address + nativeBias, Int(truncatingIfNeeded: countAndFlags & largeCountMask))
    }

    /// Whether the `String` at `address` is immortal (small, a literal or
    /// an interned key): destroying it releases nothing. Only after
    /// ``isVerified``.
    @inline(__always)
    static func isImmortal(at address: UnsafeRawPointer) -> Bool {
        address.load(fromByteOffset: 8, as: UInt64.self) & immortalFlag != 0
    }

    @inline(__always)
    private static func words(_ text: borrowing String) -> (UInt64, UInt64) {
        withUnsafeBytes(of: text) { raw in
            (raw.load(as: UInt64.self), raw.load(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// Compares strings built and read here with what the standard library
    /// makes and reports, for small strings of every length (ASCII and
    /// not), literal and runtime-built large strings.
    private static func verifyLayout() -> Bool {
        // Little-endian 64-bit only: the byte masks assume byte 0 is the
        // word's lowest.
        guard MemoryLayout<String>.size == 16, MemoryLayout<UInt>.size == 8, 1.littleEndian == 1 else { return false }
        var samples: [[UInt8]] = (0...smallCapacity).map { count in (0..<count).map { UInt8(0x61 + $0) } }
        samples += [Array("é".utf8), Array("naïve café".utf8), Array("ключ".utf8), Array("😀x".utf8)]
        for bytes in samples {
            let expected = String(decoding: bytes, as: UTF8.self)
            let built = bytes.withUnsafeBytes { raw in
                // Through a 16-byte copy too, so that both load paths are checked.
                var padded = [UInt8](raw) + [UInt8](repeating: 0xFF, count: 16)
                let wide = padded.withUnsafeBytes { small(utf8: $0.baseAddress!, count: bytes.count, readable: $0.count) }
                padded.removeAll()
                let narrow = small(utf8: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: bytes.count, readable: bytes.count)
                return (wide, narrow)
            }
            guard bits(of: built.0) == bits(of: expected), bits(of: built.1) == bits(of: expected),
                built.0 == expected, Array(built.0.utf8) == bytes
            else { return false }
            guard let read = smallWords(expected), read.count == bytes.count,
                withUnsafeBytes(of: (read.first, read.second), { Array($0.prefix(read.count)) }) == bytes
            else { return false }
            guard largeUTF8(expected) == nil else { return false }
        }
        let literal = "a string literal longer than fifteen bytes"
        let runtime = String(repeating: "ü", count: 40) + String(0x1234_5678)
        for large in [literal, runtime] {
            guard smallWords(large) == nil, let read = largeUTF8(large),
                Array(UnsafeRawBufferPointer(start: read.start, count: read.count)) == Array(large.utf8)
            else { return false }
        }
        guard isImmortal(literal), !isImmortal(runtime), isImmortal("short") else { return false }
        return verifyImmortal("twenty ASCII bytes..", literal: "twenty ASCII bytes..")
            && verifyImmortal("éééééééééé", literal: "éééééééééé")
    }

    /// Builds an immortal string over a copy of `text`'s bytes and checks it
    /// against the literal of the same text: the same flags, equal, the
    /// same hash and UTF-8, and a copy that is changed leaves it alone.
    private static func verifyImmortal(_ text: String, literal: StaticString) -> Bool {
        let bytes = Array(text.utf8)
        let storage = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 1)
        // Freed on return: every string made over it here is gone by then
        // (an immortal string is never retained, and no copy escapes).
        defer { storage.deallocate() }
        storage.copyMemory(from: bytes, byteCount: bytes.count)
        let isASCII = bytes.allSatisfy { $0 < 0x80 }
        let (first, second) = immortalWords(utf8: storage, count: bytes.count, isASCII: isASCII)
        let built = string(first, second)
        let expected = literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        let literalWords = words(text)
        var changed = built
        changed += "!"
        return first == literalWords.0 && second >> 60 == literalWords.1 >> 60
            && built == expected && built.hashValue == expected.hashValue && Array(built.utf8) == bytes
            && changed == expected + "!" && built == expected && isImmortal(built)
            && largeUTF8(built)?.start == UnsafeRawPointer(storage)
    }

    private static func isImmortal(_ text: String) -> Bool {
        withUnsafeBytes(of: text) { isImmortal(at: $0.baseAddress.unsafelyUnwrapped) }
    }

    private static func bits(of text: String) -> [UInt8] {
        withUnsafeBytes(of: text) { Array($0) }
    }
}
