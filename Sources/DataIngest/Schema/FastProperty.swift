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

    /// Whether `other` holds exactly this name's bytes.
    @inline(__always)
    func matches(_ other: UnsafeRawPointer, count: Int) -> Bool {
        guard count == length else { return false }
        var index = 0
        while index + 8 <= count {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                != other.loadUnaligned(fromByteOffset: index, as: UInt64.self) { return false }
            index += 8
        }
        while index < count {
            if bytes.load(fromByteOffset: index, as: UInt8.self) != other.load(fromByteOffset: index, as: UInt8.self) { return false }
            index += 1
        }
        return true
    }
}

/// The fast path's tables of one ``TypeSchema``, and the memory holding
/// the names they point to. Built once per class; immutable afterwards.
final class FastPropertyTable {
    let properties: UnsafeMutableBufferPointer<FastProperty>
    let keys: UnsafeMutableBufferPointer<FastKey>
    private let names: UnsafeMutableRawPointer

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
        var keyIndex = 0
        for (position, codec) in codecs.enumerated() {
            let stored = store(codec.storedName, terminated: true)
            (properties.baseAddress! + position).initialize(
                to: FastProperty(kind: ScalarKind(codec), offset: codec.offset, key: stored))
            // Swift name first: it wins when a dictionary gives both names.
            if codec.storedName == codec.swiftName {
                keys[keyIndex] = FastKey(bytes: stored.baseAddress!, length: stored.count - 1, codec: position, isSwiftName: true)
                keyIndex += 1
            } else {
                let swift = store(codec.swiftName, terminated: false)
                keys[keyIndex] = FastKey(bytes: swift.baseAddress!, length: swift.count, codec: position, isSwiftName: true)
                keys[keyIndex + 1] = FastKey(bytes: stored.baseAddress!, length: stored.count - 1, codec: position, isSwiftName: false)
                keyIndex += 2
            }
        }
    }

    deinit {
        properties.deallocate()
        keys.deallocate()
        names.deallocate()
    }
}
