#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IngestSupport

/// The long keys this thread decoded most recently, interned, so that
/// decoding many records of one type neither allocates nor reference-counts
/// a `String` for each of their long keys.
///
/// Swift keeps a string of up to 15 UTF-8 bytes inline; a longer key would
/// cost a heap allocation when it is decoded and a release when its
/// document goes away. Records of one type repeat the same keys (the seed's
/// `WeatherSensor` has two of 22 and 23 bytes), so a small direct-mapped
/// table turns each of them into a byte comparison. A slot holds an
/// *immortal* string (see ``StringRepresentation``) over a copy of the key's
/// bytes in ``BSONKeyArena``, which is never freed, so documents may keep
/// the string after the slot moves on to another key. A hit is an exact
/// byte match, so a collision costs only a miss.
///
/// One table per thread, reached through a pthread key: no lock on the
/// decoding path. When the arena's budget is spent (or the string layout
/// could not be verified), keys are decoded as ordinary strings.
final class BSONKeyCache {
    /// Slots in the table; a power of two.
    static let slotCount = 64
    /// The longest key kept; longer ones are decoded as before.
    static let maxKeyLength = 64
    /// The shortest key kept: shorter ones are inline strings already.
    static let minKeyLength = 16

    /// Per slot, the interned string's two words; (0, 0) when empty.
    private let slots: UnsafeMutablePointer<(countAndFlags: UInt64, object: UInt64)>
    /// The same interned keys found by their first 16 bytes (the decoder's
    /// fast path, before it knows a key's length): those bytes, then the
    /// string's two words; all zero when empty. Keys that share their
    /// first 16 bytes share a slot and only cost misses: the general path
    /// then finds them in `slots` without interning them again.
    private let prefixSlots: UnsafeMutablePointer<(first: UInt64, second: UInt64, countAndFlags: UInt64, object: UInt64)>
    /// Where this thread copies new keys: the rest of its current arena chunk.
    private var chunk: UnsafeMutableRawBufferPointer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private let arena: BSONKeyArena
    private let isEnabled: Bool

    init(arena: BSONKeyArena = .shared) {
        self.arena = arena
        isEnabled = StringRepresentation.isVerified
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: (0, 0), count: Self.slotCount)
        prefixSlots = .allocate(capacity: Self.slotCount)
        prefixSlots.initialize(repeating: (0, 0, 0, 0), count: Self.slotCount)
    }

    deinit {
        // The chunks stay: strings made from them may outlive this thread.
        slots.deallocate()
        prefixSlots.deallocate()
    }

    /// The interned key that the bytes at `base` start with, and its length,
    /// when the key recorded for these first 16 bytes (`first`, `second`,
    /// holding no zero byte) is there in full, followed by its NUL, which
    /// lies before `limit` bytes from `base`; nil otherwise. The input then
    /// decodes to exactly that key (same bytes, its first NUL where the
    /// key ends, valid UTF-8 as the key was when it was interned), without
    /// scanning it.
    @inline(__always)
    func interned(
        startingWith first: UInt64, _ second: UInt64, at base: UnsafeRawPointer,
        before limit: Int
    ) -> (String, length: Int)? {
        let slot = prefixSlots + Self.prefixSlot(first, second)
        let stored = slot.pointee
        guard stored.first == first, stored.second == second, stored.countAndFlags != 0,
            let (start, length) = StringRepresentation.largeUTF8(words: (stored.countAndFlags, stored.object)),
            length < limit, base.load(fromByteOffset: length, as: UInt8.self) == 0,
            Self.sameBytes(start, base, count: length)
        else { return nil }
        return (StringRepresentation.string(stored.countAndFlags, stored.object), length)
    }

    @inline(__always)
    private static func prefixSlot(_ first: UInt64, _ second: UInt64) -> Int {
        var hash = first ^ (second &* 0x9E37_79B9_7F4A_7C15)
        hash ^= hash &>> 29
        return Int(truncatingIfNeeded: hash) & (slotCount &- 1)
    }

    /// Points the prefix slot of the key at `base` (at least 16 bytes) at
    /// its interned words.
    @inline(__always)
    private func recordPrefix(of base: UnsafeRawPointer, _ words: (UInt64, UInt64)) {
        let first = UInt64(littleEndian: base.loadUnaligned(as: UInt64.self))
        let second = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        prefixSlots[Self.prefixSlot(first, second)] = (first, second, words.0, words.1)
    }

    /// The string for `key`, validated UTF-8 of `minKeyLength` to
    /// `maxKeyLength` bytes (`isASCII` when every byte is below 0x80): the
    /// interned one when the slot holds these exact bytes, otherwise a new
    /// interned one that replaces the slot's.
    @inline(__always)
    func string(validated key: UnsafeRawBufferPointer, isASCII: Bool) -> String {
        let count = key.count
        let base = key.baseAddress.unsafelyUnwrapped
        // Both words lie inside the key (count ≥ 16).
        let first = base.loadUnaligned(as: UInt64.self)
        let last = base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        var hash = (first &+ UInt64(truncatingIfNeeded: count)) ^ (last &* 0x9E37_79B9_7F4A_7C15)
        hash ^= hash &>> 32
        let slot = slots + (Int(truncatingIfNeeded: hash) & (Self.slotCount &- 1))
        let stored = slot.pointee
        if let (start, length) = StringRepresentation.largeUTF8(words: stored), length == count,
            Self.sameBytes(start, base, count: count)
        {
            recordPrefix(of: base, (stored.countAndFlags, stored.object))
            return StringRepresentation.string(stored.countAndFlags, stored.object)
        }
        return intern(key, isASCII: isASCII, into: slot)
    }

    /// Whether the `count` (at least 8) bytes at `a` and `b` are equal:
    /// word by word, the last word overlapping, instead of a `memcmp` call
    /// for keys of a few words.
    @inline(__always)
    static func sameBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        var difference: UInt64 = 0
        var index = 0
        while index &+ 8 < count {
            difference |=
                a.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index &+= 8
        }
        difference |=
            a.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            ^ b.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        return difference == 0
    }

    @inline(never)
    private func intern(
        _ key: UnsafeRawBufferPointer, isASCII: Bool,
        into slot: UnsafeMutablePointer<(countAndFlags: UInt64, object: UInt64)>
    ) -> String {
        let count = key.count
        if chunk.count < count {
            guard isEnabled, let next = arena.chunk() else { return BSONDecoder.string(validated: key) }
            chunk = next
        }
        let copy = chunk.baseAddress.unsafelyUnwrapped
        copy.copyMemory(from: key.baseAddress.unsafelyUnwrapped, byteCount: count)
        chunk = UnsafeMutableRawBufferPointer(rebasing: chunk[count...])
        let words = StringRepresentation.immortalWords(utf8: copy, count: count, isASCII: isASCII)
        slot.pointee = words
        recordPrefix(of: key.baseAddress.unsafelyUnwrapped, words)
        return StringRepresentation.string(words.0, words.1)
    }

    /// The calling thread's table, made on its first use and released when
    /// the thread exits. The thread keeps it alive, so callers use it
    /// unretained (`_withUnsafeGuaranteedRef`) on this thread.
    @inline(__always)
    static var current: Unmanaged<BSONKeyCache> {
        pthread_getspecific(threadKey).map { Unmanaged<BSONKeyCache>.fromOpaque($0) } ?? makeCurrent()
    }

    @inline(never)
    private static func makeCurrent() -> Unmanaged<BSONKeyCache> {
        let cache = Unmanaged.passRetained(BSONKeyCache())
        pthread_setspecific(threadKey, cache.toOpaque())
        return cache
    }

    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            if let raw { Unmanaged<BSONKeyCache>.fromOpaque(raw).release() }
        }
        return key
    }()
}

/// The memory interned keys live in: chunks handed to threads' key caches,
/// never freed (documents may hold the keys for as long as they like), up
/// to a fixed budget per process so that input with endless distinct keys
/// cannot grow it without bound. Past the budget, keys are decoded as
/// ordinary strings.
final class BSONKeyArena: @unchecked Sendable {
    // @unchecked: `handedOut` is guarded by `lock`; chunks are owned by the
    // one cache they were handed to.

    /// The process's arena: 64 chunks of 16 KiB (1 MiB), room for about
    /// 25,000 keys of 40 bytes.
    static let shared = BSONKeyArena(chunkSize: 16 * 1024, chunkLimit: 64)

    let chunkSize: Int
    let chunkLimit: Int
    private let lock = Lock()
    private var handedOut = 0
    /// Every chunk handed out: never freed, and kept here so that leak
    /// checkers see them as reachable (strings point inside them only
    /// through tagged words).
    private var chunks: [UnsafeMutableRawBufferPointer] = []

    init(chunkSize: Int, chunkLimit: Int) {
        self.chunkSize = chunkSize
        self.chunkLimit = chunkLimit
    }

    /// A new chunk of `chunkSize` bytes, or nil once `chunkLimit` chunks
    /// were handed out.
    func chunk() -> UnsafeMutableRawBufferPointer? {
        lock.withLock {
            guard handedOut < chunkLimit else { return nil }
            handedOut += 1
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 8)  // never freed: see above
            chunks.append(chunk)
            return chunk
        }
    }

    /// Chunks handed out so far.
    var chunksHandedOut: Int { lock.withLock { handedOut } }
}
