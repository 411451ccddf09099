import Foundation
import IngestCore

/// A type that `@Persisted` can store: `Bool`, the integer types, `Float`,
/// `Double`, `String`, `Data`, `Date`, `Decimal128`, `ObjectId`, `UUID`,
/// ``AnyRealmValue``, optionals of these, ``List``, ``Map``, embedded objects
/// and links to `Object` types. The conformances are provided by DataIngest;
/// apps do not add their own (the requirements are implementation details).
public protocol PersistableValue {
    /// How the type appears in the schema.
    static var _persistedInfo: PersistedValueInfo { get }
    /// The value of a property declared without `= value`.
    static func _persistedDefault() -> Self
    /// Encodes the value as one BSON element named `key`.
    func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError)
    /// Converts a value given to `create(_:value:)` (a dictionary or array
    /// element), accepting exact and standard numeric conversions.
    static func _fromCreateValue(_ value: Any) -> Self?
    /// Encodes a value given to `create(_:value:)`; throws naming `path()`
    /// (built only on error) when it cannot be stored in this type.
    static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
}

extension PersistableValue {
    public static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
    {
        guard let converted = _fromCreateValue(value) else {
            throw RealmError.wrongValueType(path: path(), expected: _persistedInfo.typeDescription, found: value)
        }
        try converted._encodeBSON(key: key, into: &encoder)
    }
}

/// How a Swift type maps to a schema property. An implementation detail of
/// ``PersistableValue``.
public struct PersistedValueInfo {
    var type: PropertyType
    var isOptional = false
    var collection: CollectionKind = .single
    /// The target class of object properties.
    var objectType: ObjectBase.Type?
    /// Why the type cannot be stored, when it cannot.
    var unsupported: String?
    /// For integer types narrower than 64 bits.
    var integerRange: ClosedRange<Int64>?
    /// The Swift spelling, for messages.
    var typeDescription: String

    init(_ type: PropertyType, _ description: String, integerRange: ClosedRange<Int64>? = nil) {
        self.type = type
        self.typeDescription = description
        self.integerRange = integerRange
    }
}

/// Lets `Optional` conformances look inside an `Any`.
protocol OptionalValue {
    var wrappedAny: Any? { get }
}

extension Optional: OptionalValue {
    var wrappedAny: Any? {
        switch self {
        case .some(let value): return value
        case .none: return nil
        }
    }
}

/// `value` as a `U` when its dynamic type is exactly `U`: a metadata
/// comparison instead of a runtime cast (several times faster). Falls back
/// to `nil`, after which callers use `as?` for conversions and optionals.
@inline(__always)
func exactly<U>(_ value: Any, as type: U.Type) -> U? {
    func open<T>(_ opened: T) -> U? { T.self == U.self ? unsafeBitCast(opened, to: U.self) : nil }
    return _openExistential(value, do: open)
}

/// `value` with any optional layers removed; `nil` for `nil` and `NSNull`.
@inline(__always)
func unwrapped(_ value: Any) -> Any? {
    if let optional = value as? OptionalValue {
        guard let inner = optional.wrappedAny else { return nil }
        return unwrapped(inner)
    }
    if value is NSNull { return nil }
    return value
}
