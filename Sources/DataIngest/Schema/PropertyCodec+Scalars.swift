import Foundation
import IngestCore

// Non-generic codecs for the common scalar types. A generic class's methods
// run unspecialized (type metadata lookups and witness calls per value);
// these subclasses bind the type, so the hot paths of create compile to
// direct code. Generated from one template; the generic codec handles every
// other type.

final class BoolPropertyCodec: TypedPropertyCodec<Bool> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Bool._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Bool._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class IntPropertyCodec: TypedPropertyCodec<Int> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Int._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Int._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class Int64PropertyCodec: TypedPropertyCodec<Int64> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Int64._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Int64._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class Int32PropertyCodec: TypedPropertyCodec<Int32> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Int32._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Int32._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class FloatPropertyCodec: TypedPropertyCodec<Float> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Float._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Float._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class DoublePropertyCodec: TypedPropertyCodec<Double> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Double._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Double._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class StringPropertyCodec: TypedPropertyCodec<String> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try String._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        String._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class ObjectIdPropertyCodec: TypedPropertyCodec<ObjectId> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try ObjectId._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        ObjectId._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class DatePropertyCodec: TypedPropertyCodec<Date> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Date._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Date._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class UUIDPropertyCodec: TypedPropertyCodec<UUID> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try UUID._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        UUID._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class Decimal128PropertyCodec: TypedPropertyCodec<Decimal128> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Decimal128._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Decimal128._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class DataPropertyCodec: TypedPropertyCodec<Data> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Data._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Data._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}

final class OptionalStringPropertyCodec: TypedPropertyCodec<String?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try String?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

final class OptionalIntPropertyCodec: TypedPropertyCodec<Int?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Int?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

final class OptionalDoublePropertyCodec: TypedPropertyCodec<Double?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Double?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

final class OptionalFloatPropertyCodec: TypedPropertyCodec<Float?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Float?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

final class OptionalBoolPropertyCodec: TypedPropertyCodec<Bool?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Bool?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

final class OptionalDatePropertyCodec: TypedPropertyCodec<Date?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Date?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

final class OptionalObjectIdPropertyCodec: TypedPropertyCodec<ObjectId?> {
    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try ObjectId?._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }
}

extension TypedPropertyCodec {
    /// The codec for a `@Persisted` field of type `Value`: a non-generic one
    /// for the common scalars, the generic one otherwise.
    static func make(swiftName: String, storedName: String, offset: Int) -> PropertyCodec {
        switch Value.self as Any.Type {
        case let type where type == Bool.self: return BoolPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Int.self: return IntPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Int64.self: return Int64PropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Int32.self: return Int32PropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Float.self: return FloatPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Double.self: return DoublePropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == String.self: return StringPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == ObjectId.self:
            return ObjectIdPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Date.self: return DatePropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == UUID.self: return UUIDPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Decimal128.self:
            return Decimal128PropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Data.self: return DataPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == String?.self:
            return OptionalStringPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Int?.self: return OptionalIntPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Double?.self:
            return OptionalDoublePropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Float?.self:
            return OptionalFloatPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Bool?.self:
            return OptionalBoolPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == Date?.self:
            return OptionalDatePropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        case let type where type == ObjectId?.self:
            return OptionalObjectIdPropertyCodec(swiftName: swiftName, storedName: storedName, offset: offset)
        default: return TypedPropertyCodec<Value>(swiftName: swiftName, storedName: storedName, offset: offset)
        }
    }
}
