import Foundation
import IngestCore

/// A value of any storable type (a `mixed` property), like the seed SDK's
/// `AnyRealmValue`.
///
/// ```swift
/// class Event: AsymmetricObject {
///     @Persisted(primaryKey: true) var _id: ObjectId
///     @Persisted var payload: AnyRealmValue
/// }
/// event.payload = .string("door opened")
/// event.payload = .dictionary(["count": .int(3), "ok": .bool(true)])
/// ```
///
/// BSON: `.none` is null, `.int` int64, `.float` a double, `.data` binary
/// subtype 0, `.uuid` binary subtype 4, `.date` a datetime, `.list` an array,
/// `.dictionary` an embedded document.
public enum AnyRealmValue: Hashable {
    case none
    case int(Int)
    case bool(Bool)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case objectId(ObjectId)
    case decimal128(Decimal128)
    case uuid(UUID)
    /// A list of mixed values (an array).
    case list([AnyRealmValue])
    /// A map of mixed values (an embedded document with string keys).
    case dictionary([String: AnyRealmValue])
}

extension AnyRealmValue: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo {
        var info = PersistedValueInfo(.mixed, "AnyRealmValue")
        info.isOptional = true  // it can hold null
        return info
    }
    public static func _persistedDefault() -> AnyRealmValue { .none }

    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        switch self {
        case .none: encoder.key(BSONType.null, key)
        case .int(let value): try value._encodeBSON(key: key, into: &encoder)
        case .bool(let value): try value._encodeBSON(key: key, into: &encoder)
        case .float(let value): try value._encodeBSON(key: key, into: &encoder)
        case .double(let value): try value._encodeBSON(key: key, into: &encoder)
        case .string(let value): try value._encodeBSON(key: key, into: &encoder)
        case .data(let value): try value._encodeBSON(key: key, into: &encoder)
        case .date(let value): try value._encodeBSON(key: key, into: &encoder)
        case .objectId(let value): try value._encodeBSON(key: key, into: &encoder)
        case .decimal128(let value): try value._encodeBSON(key: key, into: &encoder)
        case .uuid(let value): try value._encodeBSON(key: key, into: &encoder)
        case .list(let values):
            encoder.key(BSONType.array, key)
            let start = encoder.beginDocument()
            for (index, value) in values.enumerated() {
                try value._encodeBSON(key: EncodedKey.index(index), into: &encoder)
            }
            encoder.endDocument(start)
        case .dictionary(let values):
            encoder.key(BSONType.document, key)
            let start = encoder.beginDocument()
            for (entryKey, value) in values.sorted(by: { $0.key < $1.key }) {
                guard isValidMapKey(entryKey) else { throw RealmError.invalidMapKey(path: key.name, key: entryKey) }
                try value._encodeBSON(key: EncodedKey(entryKey), into: &encoder)
            }
            encoder.endDocument(start)
        }
    }

    /// Accepts an `AnyRealmValue`, nil, or a value of a storable type
    /// (arrays and `[String: Any]` dictionaries of them too).
    public static func _fromCreateValue(_ value: Any) -> AnyRealmValue? {
        guard let value = unwrapped(value) else { return AnyRealmValue.none }
        switch value {
        case let mixed as AnyRealmValue: return mixed
        case let bool as Bool: return .bool(bool)
        case let int as Int: return .int(int)
        case let float as Float: return .float(float)
        case let double as Double: return .double(double)
        case let string as String: return .string(string)
        case let data as Data: return .data(data)
        case let date as Date: return .date(date)
        case let id as ObjectId: return .objectId(id)
        case let decimal as Decimal128: return .decimal128(decimal)
        case let uuid as UUID: return .uuid(uuid)
        case let array as [Any]:
            var values: [AnyRealmValue] = []
            for element in array {
                guard let converted = _fromCreateValue(element) else { return nil }
                values.append(converted)
            }
            return .list(values)
        case let dictionary as [String: Any]:
            var values: [String: AnyRealmValue] = [:]
            for (key, element) in dictionary {
                guard let converted = _fromCreateValue(element) else { return nil }
                values[key] = converted
            }
            return .dictionary(values)
        default:
            if let int = integerValue(value, in: Int64.min...Int64.max) { return .int(Int(int)) }
            return nil
        }
    }
}
