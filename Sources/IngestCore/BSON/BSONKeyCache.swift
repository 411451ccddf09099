#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The long keys this thread decoded most recently, so that decoding many
/// records of one type does not allocate a new `String` for each of their
/// long keys.
///
/// Swift keeps a string of up to 15 UTF-8 bytes inline; a longer key costs
/// a heap allocation when it is decoded and a free when its document goes
/// away. Records of one type repeat the same keys (the seed's
/// `WeatherSensor` has two of 22 and 23 bytes), so a small direct-mapped
/// table turns each of them into a byte comparison and a retain. A slot
/// holds the key's bytes next to its `String`, and a hit is an exact byte
/// match, so a collision costs only a miss. One table per thread, reached
/// through a pthread key: no lock on the decoding path.
final class BSONKeyCache {
    /// Slots in the table; a power of two.
    static let slotCount = 64
    /// The longest key kept; longer ones are decoded as before.
    static let maxKeyLength = 64
    /// The shortest key kept: shorter ones are inline strings already.
    static let minKeyLength = 16

    private let lengths: UnsafeMutablePointer<Int>
    private let keyBytes: UnsafeMutableRawPointer
    private let strings: UnsafeMutablePointer<String>

    private init() {
        lengths = .allocate(capacity: Self.slotCount)
        lengths.initialize(repeating: 0, count: Self.slotCount)
        keyBytes = .allocate(byteCount: Self.slotCount * Self.maxKeyLength, alignment: 8)
        strings = .allocate(capacity: Self.slotCount)
        strings.initialize(repeating: "", count: Self.slotCount)
    }

    deinit {
        strings.deinitialize(count: Self.slotCount)
        strings.deallocate()
        keyBytes.deallocate()
        lengths.deallocate()
    }

    /// The string for `key`, validated UTF-8 of `minKeyLength` to
    /// `maxKeyLength` bytes: the cached one when the slot holds these exact
    /// bytes, otherwise a new one that replaces the slot's.
    @inline(__always)
    func string(validated key: UnsafeRawBufferPointer) -> String {
        let count = key.count
        let base = key.baseAddress.unsafelyUnwrapped
        // Both words lie inside the key (count ≥ 16).
        let first = base.loadUnaligned(as: UInt64.self)
        let last = base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        var hash = (first &+ UInt64(truncatingIfNeeded: count)) ^ (last &* 0x9E37_79B9_7F4A_7C15)
        hash ^= hash &>> 32
        let slot = Int(truncatingIfNeeded: hash) & (Self.slotCount &- 1)
        let stored = keyBytes + slot &* Self.maxKeyLength
        if lengths[slot] == count && memcmp(stored, base, count) == 0 {
            return strings[slot]
        }
        let text = BSONDecoder.string(validated: key)
        memcpy(stored, base, count)
        lengths[slot] = count
        strings[slot] = text
        return text
    }

    /// The calling thread's table, made on its first use and released when
    /// the thread exits.
    @inline(__always)
    static var current: BSONKeyCache {
        if let raw = pthread_getspecific(threadKey) {
            return Unmanaged<BSONKeyCache>.fromOpaque(raw).takeUnretainedValue()
        }
        return makeCurrent()
    }

    @inline(never)
    private static func makeCurrent() -> BSONKeyCache {
        let cache = BSONKeyCache()
        pthread_setspecific(threadKey, Unmanaged.passRetained(cache).toOpaque())
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
