import Foundation
import IngestCore

/// The property types `create` encodes without their codec: the common
/// non-optional scalars. A dictionary value of exactly the right type (or of
/// a type with a lossless standard conversion, see
/// ``TypeSchema/encodeFast(_:kind:key:into:)``) and an instance's field are
/// encoded inline; everything else, and every error, goes through the
/// property's ``PropertyCodec``, so both paths accept and reject the same
/// values with the same messages.
enum ScalarKind: UInt8 {
    /// Not on the fast path: always through the codec.
    case none
    case bool
    /// `Int` (64 bits wide on the platforms DataIngest supports).
    case int
    case int64
    case float
    case double
    case string
    case objectId
    case date

    /// The kind of a codec, decided once when the schema is derived.
    init(_ codec: PropertyCodec) {
        switch codec {
        case is BoolPropertyCodec: self = .bool
        case is IntPropertyCodec: self = MemoryLayout<Int>.size == 8 ? .int : .none
        case is Int64PropertyCodec: self = .int64
        case is FloatPropertyCodec: self = .float
        case is DoublePropertyCodec: self = .double
        case is StringPropertyCodec: self = .string
        case is ObjectIdPropertyCodec: self = .objectId
        case is DatePropertyCodec: self = .date
        default: self = .none
        }
    }
}

/// One property as the `create` fast path sees it, in plain memory: the hot
/// loop reads these without retaining codecs, keys or arrays.
struct FastProperty {
    var kind: ScalarKind
    /// The offset of the property's `Persisted` field in an instance.
    var offset: Int
    /// The stored name's UTF-8 and its NUL: the BSON element's key.
    var key: UnsafeRawBufferPointer
}

/// A name a `create` dictionary may use for a property (its Swift name or
/// its stored name), in plain memory.
struct FastKey {
    /// The name's UTF-8 (no NUL).
    var bytes: UnsafeRawPointer
    var length: Int
    /// The property's index in ``TypeSchema/codecs``.
    var codec: Int
    var isSwiftName: Bool
    /// The two words of a `String` holding the name, kept alive by the
    /// table. A key with the same words is the same string: names of up to
    /// 15 bytes are stored inline in those words, so every such key
    /// matches here without reading its UTF-8.
    var words: (UInt64, UInt64)

    /// Whether `other` holds exactly this name's bytes: whole words, the
    /// last one overlapping, so no byte loop.
    @inline(__always)
    func matches(_ other: UnsafeRawPointer, count: Int) -> Bool {
        guard count == length else { return false }
        func same<T: FixedWidthInteger>(_ offset: Int, _ type: T.Type) -> Bool {
            bytes.loadUnaligned(fromByteOffset: offset, as: T.self) == other.loadUnaligned(fromByteOffset: offset, as: T.self)
        }
        if count >= 8 {
            var index = 0
            while index + 8 < count {
                if !same(index, UInt64.self) { return false }
                index += 8
            }
            return same(count - 8, UInt64.self)
        }
        if count >= 4 { return same(0, UInt32.self) && same(count - 4, UInt32.self) }
        if count >= 2 { return same(0, UInt16.self) && same(count - 2, UInt16.self) }
        return count == 0 || same(0, UInt8.self)
    }

    /// The two words of `string`.
    @inline(__always)
    static func words(of string: String) -> (UInt64, UInt64) {
        unsafeBitCast(string, to: (UInt64, UInt64).self)
    }
}

/// The fast path's tables of one ``TypeSchema``, and the memory holding
/// the names they point to. Built once per class; immutable afterwards.
final class FastPropertyTable {
    let properties: UnsafeMutableBufferPointer<FastProperty>
    let keys: UnsafeMutableBufferPointer<FastKey>
    private let names: UnsafeMutableRawPointer
    /// The strings whose words the keys hold.
    private let strings: [String]

    init(codecs: [PropertyCodec]) {
        var size = 0
        var keyCount = 0
        for codec in codecs {
            size += codec.storedName.utf8.count + 1 + codec.swiftName.utf8.count
            keyCount += codec.storedName == codec.swiftName ? 1 : 2
        }
        names = .allocate(byteCount: max(size, 1), alignment: 8)
        properties = .allocate(capacity: codecs.count)
        keys = .allocate(capacity: keyCount)
        var cursor = names
        func store(_ name: String, terminated: Bool) -> UnsafeRawBufferPointer {
            let start = cursor
            for byte in name.utf8 {
                cursor.storeBytes(of: byte, as: UInt8.self)
                cursor += 1
            }
            if terminated {
                cursor.storeBytes(of: 0, as: UInt8.self)
                cursor += 1
            }
            return UnsafeRawBufferPointer(start: start, count: cursor - start)
        }
        // Built from UTF-8, so that names that fit are inline (small) strings.
        var strings: [String] = []
        func words(_ name: String) -> (UInt64, UInt64) {
            let string = String(decoding: Array(name.utf8), as: UTF8.self)
            strings.append(string)
            return FastKey.words(of: string)
        }
        var keyIndex = 0
        for (position, codec) in codecs.enumerated() {
            let stored = store(codec.storedName, terminated: true)
            (properties.baseAddress! + position).initialize(
                to: FastProperty(kind: ScalarKind(codec), offset: codec.offset, key: stored))
            // Swift name first: it wins when a dictionary gives both names.
            if codec.storedName == codec.swiftName {
                keys[keyIndex] = FastKey(
                    bytes: stored.baseAddress!, length: stored.count - 1, codec: position,
                    isSwiftName: true, words: words(codec.swiftName))
                keyIndex += 1
            } else {
                let swift = store(codec.swiftName, terminated: false)
                keys[keyIndex] = FastKey(
                    bytes: swift.baseAddress!, length: swift.count, codec: position,
                    isSwiftName: true, words: words(codec.swiftName))
                keys[keyIndex + 1] = FastKey(
                    bytes: stored.baseAddress!, length: stored.count - 1, codec: position,
                    isSwiftName: false, words: words(codec.storedName))
                keyIndex += 2
            }
        }
        self.strings = strings
    }

    deinit {
        properties.deallocate()
        keys.deallocate()
        names.deallocate()
    }
}
