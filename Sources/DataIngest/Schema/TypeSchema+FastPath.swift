import Foundation
import IngestCore

// The per-property fast paths of `create` and of encoding an instance: the
// common scalars are encoded inline from plain tables (``FastProperty``),
// without a virtual codec call, generic conversion code or reference
// counting. Anything they do not take goes to the property's codec.

extension TypeSchema {
    /// Encodes the fields of the instance at `base` (the element header of
    /// the document, if any, is already written).
    @inline(__always)
    func encodeFields(objectAt base: UnsafeRawPointer, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        for position in 0..<fastProperties.count {
            let property = fastProperties[position]
            let field = base + property.offset
            switch property.kind {
            case .bool:
                encoder.element(BSONType.bool, property.key, littleEndian: UInt8(field.value(of: Bool.self) ? 1 : 0))
            case .int:
                encoder.element(BSONType.int64, property.key, littleEndian: Int64(field.value(of: Int.self)))
            case .int64:
                encoder.element(BSONType.int64, property.key, littleEndian: field.value(of: Int64.self))
            case .float:
                encoder.element(BSONType.double, property.key, littleEndian: Double(field.value(of: Float.self)).bitPattern)
            case .double:
                encoder.element(BSONType.double, property.key, littleEndian: field.value(of: Double.self).bitPattern)
            case .string:
                encoder.header(BSONType.string, property.key)
                encoder.string(field.value(of: String.self))
            case .objectId:
                encoder.header(BSONType.objectId, property.key)
                encoder.objectId(field.value(of: ObjectId.self))
            case .date:
                encoder.element(BSONType.datetime, property.key, littleEndian: field.value(of: Date.self)._bsonMilliseconds)
            case .none:
                let codec = codecs[position]
                try codec.encode(objectAt: base, key: codec.key, into: &encoder)
            }
        }
    }

    /// Encodes a `create` value given for a property of `kind`, when its
    /// dynamic type is one the fast path takes: exactly the property's
    /// type, or a lossless standard conversion the codec would also make
    /// (a `Double` or `Int` for a `Float`, a `Float` or `Int` for a
    /// `Double`, an `Int64` for an `Int`). Returns false, having written
    /// nothing, for every other value: the caller then asks the codec,
    /// which converts or throws naming the property.
    @inline(__always)
    func encodeFast(_ value: borrowing Any, kind: ScalarKind, key: UnsafeRawBufferPointer, into encoder: inout BSONRecordEncoder) -> Bool {
        withUnsafePointer(to: value) { encodeFast(at: UnsafeRawPointer($0), kind: kind, key: key, into: &encoder) }
    }

    /// ``encodeFast(_:kind:key:into:)`` for the `Any` at `container`.
    @inline(__always)
    func encodeFast(at container: UnsafeRawPointer, kind: ScalarKind, key: UnsafeRawBufferPointer, into encoder: inout BSONRecordEncoder)
        -> Bool
    {
        ExistentialPayload.peek(at: container) { type, buffer in
            switch kind {
            case .double:
                let number: Double
                if type == Words.double {
                    number = buffer.load(as: Double.self)
                } else if type == Words.int {
                    number = Double(Int64(buffer.load(as: Int.self)))
                } else if type == Words.float {
                    number = Double(buffer.load(as: Float.self))
                } else {
                    return false
                }
                encoder.element(BSONType.double, key, littleEndian: number.bitPattern)
            case .float:
                let number: Float
                if type == Words.double {
                    let double = buffer.load(as: Double.self)
                    number = Float(double)
                    // Out of Float's range: the codec throws.
                    if number.isInfinite && double.isFinite { return false }
                } else if type == Words.float {
                    number = buffer.load(as: Float.self)
                } else if type == Words.int {
                    number = Float(Int64(buffer.load(as: Int.self)))
                } else {
                    return false
                }
                encoder.element(BSONType.double, key, littleEndian: Double(number).bitPattern)
            case .int, .int64:
                // Int is 64 bits wide wherever these kinds are used.
                guard type == Words.int || type == Words.int64 else { return false }
                encoder.element(BSONType.int64, key, littleEndian: buffer.load(as: Int64.self))
            case .string:
                guard type == Words.string else { return false }
                encoder.header(BSONType.string, key)
                encoder.string(buffer.load(as: String.self))
            case .objectId:
                guard type == Words.objectId else { return false }
                encoder.header(BSONType.objectId, key)
                encoder.objectId(buffer.load(as: ObjectId.self))
            case .bool:
                guard type == Words.bool else { return false }
                encoder.element(BSONType.bool, key, littleEndian: UInt8(buffer.load(as: Bool.self) ? 1 : 0))
            case .date:
                guard type == Words.date else { return false }
                encoder.element(BSONType.datetime, key, littleEndian: buffer.load(as: Date.self)._bsonMilliseconds)
            case .none:
                return false
            }
            return true
        }
    }

    /// The primary key a `create` value gives, when ``encodeFast`` took it.
    @inline(__always)
    func fastPrimaryKey(_ value: borrowing Any, kind: ScalarKind) -> PrimaryKeyValue? {
        withUnsafePointer(to: value) { fastPrimaryKey(at: UnsafeRawPointer($0), kind: kind) }
    }

    /// ``fastPrimaryKey(_:kind:)`` for the `Any` at `container`.
    @inline(__always)
    func fastPrimaryKey(at container: UnsafeRawPointer, kind: ScalarKind) -> PrimaryKeyValue? {
        ExistentialPayload.peek(at: container) { type, buffer in
            switch kind {
            case .objectId where type == Words.objectId: return .objectId(buffer.load(as: ObjectId.self))
            case .int where type == Words.int || type == Words.int64, .int64 where type == Words.int || type == Words.int64:
                return .int(buffer.load(as: Int64.self))
            case .string where type == Words.string: return .string(buffer.load(as: String.self))
            default: return nil
            }
        }
    }

    /// The property a `create` dictionary key names: a linear scan over the
    /// (few) names comparing the string's two words (enough for names of up
    /// to 15 bytes), then one comparing lengths and bytes.
    @inline(__always)
    func fastKeyMatch(_ key: String) -> (codec: Int, isSwiftName: Bool)? {
        let keys = fastKeys
        let words = FastKey.words(of: key)
        for index in 0..<keys.count where keys[index].words == words {
            return (keys[index].codec, keys[index].isSwiftName)
        }
        let found = key.utf8.withContiguousStorageIfAvailable { utf8 -> (codec: Int, isSwiftName: Bool)? in
            guard let base = utf8.baseAddress else { return nil }
            let raw = UnsafeRawPointer(base)
            for index in 0..<keys.count {
                let entry = keys[index]
                if entry.matches(raw, count: utf8.count) { return (entry.codec, entry.isSwiftName) }
            }
            return nil
        }
        if let found { return found }
        // Strings without contiguous UTF-8 (bridged ones): compare as strings.
        return createKeys.first { $0.name == key }.map { ($0.codec, $0.isSwiftName) }
    }
}

/// The metadata words of the types the fast path reads from an `Any`.
private enum Words {
    static var bool: UnsafeRawPointer { ExistentialPayload.typeWord(Bool.self) }
    static var int: UnsafeRawPointer { ExistentialPayload.typeWord(Int.self) }
    static var int64: UnsafeRawPointer { ExistentialPayload.typeWord(Int64.self) }
    static var float: UnsafeRawPointer { ExistentialPayload.typeWord(Float.self) }
    static var double: UnsafeRawPointer { ExistentialPayload.typeWord(Double.self) }
    static var string: UnsafeRawPointer { ExistentialPayload.typeWord(String.self) }
    static var objectId: UnsafeRawPointer { ExistentialPayload.typeWord(ObjectId.self) }
    static var date: UnsafeRawPointer { ExistentialPayload.typeWord(Date.self) }
}

extension UnsafeRawPointer {
    /// The value of the `Persisted<T>` field at this address.
    @inline(__always)
    fileprivate func value<T: PersistableValue>(of type: T.Type) -> T {
        assumingMemoryBound(to: Persisted<T>.self).pointee.storage
    }
}
