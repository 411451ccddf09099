import Foundation
import IngestCore

extension Bool: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.bool, "Bool") }
    public static func _persistedDefault() -> Bool { false }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.bool, key)
        encoder.bool(self)
    }
    public static func _fromCreateValue(_ value: Any) -> Bool? { exactly(value, as: Bool.self) ?? value as? Bool }
}

/// Integer conversion for create values: any integer type in range, or an
/// integral floating-point value in range.
@inline(__always)
func integerValue(_ value: Any, in range: ClosedRange<Int64>) -> Int64? {
    let result: Int64?
    switch value {
    case let number as Int: result = Int64(number)
    case let number as Int64: result = number
    case let number as Int32: result = Int64(number)
    case let number as Int16: result = Int64(number)
    case let number as Int8: result = Int64(number)
    case let number as UInt8: result = Int64(number)
    case let number as UInt16: result = Int64(number)
    case let number as UInt32: result = Int64(number)
    case let number as UInt: result = Int64(exactly: number)
    case let number as UInt64: result = Int64(exactly: number)
    case let number as Double: result = Int64(exactly: number)
    case let number as Float: result = Int64(exactly: number)
    default: result = nil
    }
    guard let result, range.contains(result) else { return nil }
    return result
}

/// The sized integers share one implementation; all are stored as int64.
/// The integer types `@Persisted` stores (all as int64). An implementation detail.
public protocol _PersistableInteger: PersistableValue, FixedWidthInteger {}

extension _PersistableInteger {
    public static var _persistedInfo: PersistedValueInfo {
        PersistedValueInfo(.int, String(describing: Self.self), integerRange: Int64(Self.min)...Int64(Self.max))
    }
    public static func _persistedDefault() -> Self { 0 }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.int64, key)
        encoder.int64(Int64(self))
    }
    public static func _fromCreateValue(_ value: Any) -> Self? {
        if let exact = exactly(value, as: Self.self) ?? value as? Self { return exact }
        return integerValue(value, in: Int64(Self.min)...Int64(Self.max)).map { Self($0) }
    }
}

extension Int: _PersistableInteger {}
extension Int8: _PersistableInteger {}
extension Int16: _PersistableInteger {}
extension Int32: _PersistableInteger {}
extension Int64: _PersistableInteger {}

extension Float: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.float, "Float") }
    public static func _persistedDefault() -> Float { 0 }
    /// Stored as a BSON double holding exactly the Float's value.
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.double, key)
        encoder.double(Double(self))
    }
    /// Accepts a Float, a Double within Float's range (rounded to nearest,
    /// as `Float(_:)` does; literals such as `66.7` arrive as Double) or an
    /// integer.
    public static func _fromCreateValue(_ value: Any) -> Float? {
        if let number = exactly(value, as: Double.self) {
            let float = Float(number)
            return float.isInfinite && number.isFinite ? nil : float
        }
        switch value {
        case let number as Double:  // Swift literals in [String: Any] arrive as Double
            let float = Float(number)
            return float.isInfinite && number.isFinite ? nil : float
        case let number as Float: return number
        default:
            return integerValue(value, in: Int64.min...Int64.max).map { Float($0) }
        }
    }
}

extension Double: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.double, "Double") }
    public static func _persistedDefault() -> Double { 0 }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.double, key)
        encoder.double(self)
    }
    /// Accepts a Double, a Float (exact) or an integer.
    public static func _fromCreateValue(_ value: Any) -> Double? {
        if let number = exactly(value, as: Double.self) { return number }
        switch value {
        case let number as Double: return number
        case let number as Float: return Double(number)
        default: return integerValue(value, in: Int64.min...Int64.max).map { Double($0) }
        }
    }
}

extension String: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.string, "String") }
    public static func _persistedDefault() -> String { "" }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.string, key)
        encoder.string(self)
    }
    public static func _fromCreateValue(_ value: Any) -> String? {
        if let string = exactly(value, as: String.self) ?? value as? String { return string }
        if let substring = value as? Substring { return String(substring) }
        return nil
    }
}

extension Data: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.data, "Data") }
    public static func _persistedDefault() -> Data { Data() }
    /// Stored as BSON binary subtype 0.
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.binary, key)
        withUnsafeBytes { encoder.binary(BSONBinary.Subtype.generic, $0) }
    }
    public static func _fromCreateValue(_ value: Any) -> Data? {
        if let data = value as? Data { return data }
        if let bytes = value as? [UInt8] { return Data(bytes) }
        return nil
    }
}

extension Date: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.date, "Date") }
    public static func _persistedDefault() -> Date { Date(timeIntervalSince1970: 0) }
    /// Stored as a BSON datetime: whole milliseconds since the epoch,
    /// rounded down (sub-millisecond precision is dropped).
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.datetime, key)
        encoder.int64(_bsonMilliseconds)
    }
    /// The BSON datetime value: whole milliseconds since the epoch.
    var _bsonMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
    public static func _fromCreateValue(_ value: Any) -> Date? { exactly(value, as: Date.self) ?? value as? Date }
}

extension Decimal128: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.decimal128, "Decimal128") }
    /// Zero: coefficient 0, exponent 0 (biased 6176).
    public static func _persistedDefault() -> Decimal128 { Decimal128(high: 0x3040_0000_0000_0000, low: 0) }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.decimal128, key)
        encoder.decimal128(self)
    }
    public static func _fromCreateValue(_ value: Any) -> Decimal128? { value as? Decimal128 }
}

extension ObjectId: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.objectId, "ObjectId") }
    /// A newly generated id, so that an `_id` declared without a value is
    /// unique.
    public static func _persistedDefault() -> ObjectId { ObjectId.generate() }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.objectId, key)
        encoder.objectId(self)
    }
    public static func _fromCreateValue(_ value: Any) -> ObjectId? { exactly(value, as: ObjectId.self) ?? value as? ObjectId }
}

extension UUID: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo { PersistedValueInfo(.uuid, "UUID") }
    public static func _persistedDefault() -> UUID { UUID() }
    /// Stored as BSON binary subtype 4 holding the 16 bytes.
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.binary, key)
        withUnsafeBytes(of: uuid) { encoder.binary(BSONBinary.Subtype.uuid, $0) }
    }
    public static func _fromCreateValue(_ value: Any) -> UUID? { exactly(value, as: UUID.self) ?? value as? UUID }
}

extension Optional: PersistableValue where Wrapped: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo {
        var info = Wrapped._persistedInfo
        if info.isOptional {
            info.unsupported = "a double optional (\(info.typeDescription)?) cannot be stored; use one level of Optional"
        } else if info.collection != .single {
            info.unsupported = "a List or Map cannot be optional (it is empty instead of nil); declare it without '?'"
        } else if info.type == .mixed {
            info.unsupported = "AnyRealmValue cannot be optional: it holds nil itself (.none); declare it without '?'"
        }
        info.isOptional = true
        info.typeDescription += "?"
        return info
    }
    public static func _persistedDefault() -> Self { nil }
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        if let self {
            try self._encodeBSON(key: key, into: &encoder)
        } else {
            encoder.key(BSONType.null, key)
        }
    }
    public static func _fromCreateValue(_ value: Any) -> Self? {
        guard let inner = unwrapped(value) else { return .some(nil) }
        return Wrapped._fromCreateValue(inner).map { .some($0) }
    }
    public static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
    {
        guard let inner = unwrapped(value) else {
            encoder.key(BSONType.null, key)
            return
        }
        try Wrapped._encodeCreateValue(inner, key: key, path: path, into: &encoder)
    }
}
