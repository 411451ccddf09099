import IngestCore

/// The key types a ``Map`` accepts: only `String`. An implementation detail.
public protocol _MapKey: Hashable {
    /// The key as stored.
    var _mapKeyString: String { get }
}

extension String: _MapKey {
    public var _mapKeyString: String { self }
}

/// A map property from string keys to values, stored as an embedded BSON
/// document (keys in sorted order, so equal maps encode to equal bytes).
///
/// Keys must be non-empty, contain no `.` or NUL and not start with `$`
/// (MongoDB field-name rules); other keys fail the write with an error.
///
/// ```swift
/// class Reading: AsymmetricObject {
///     @Persisted(primaryKey: true) var _id: ObjectId
///     @Persisted var labels: Map<String, String>
/// }
/// reading.labels["site"] = "roof"
/// ```
public final class Map<Key: _MapKey, Value: PersistableValue>: ExpressibleByDictionaryLiteral {
    private var storage: [Key: Value]

    /// An empty map.
    public init() { storage = [:] }

    /// A map holding `dictionary`.
    public init(_ dictionary: [Key: Value]) { storage = dictionary }

    public required init(dictionaryLiteral elements: (Key, Value)...) {
        storage = Dictionary(elements, uniquingKeysWith: { _, last in last })
    }

    /// The value for `key`; setting `nil` removes the entry.
    public subscript(key: Key) -> Value? {
        get { storage[key] }
        set { storage[key] = newValue }
    }

    /// The number of entries.
    public var count: Int { storage.count }
    /// The keys, in no particular order.
    public var keys: [Key] { Array(storage.keys) }
    /// The entries as a dictionary.
    public var dictionary: [Key: Value] { storage }
    /// Removes every entry.
    public func removeAll() { storage.removeAll() }
}

/// Whether `key` is a usable MongoDB field name.
func isValidMapKey(_ key: String) -> Bool {
    !key.isEmpty && !key.hasPrefix("$") && !key.utf8.contains(UInt8(ascii: ".")) && !key.utf8.contains(0)
}

extension Map: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo {
        var info = Value._persistedInfo
        if info.collection != .single {
            info.unsupported = "a Map cannot hold \(info.typeDescription); nested collections are not supported"
        } else if info.type == .object && !info.isOptional {
            info.unsupported = "a Map of objects must have optional values; declare it as Map<String, \(info.typeDescription)?>"
        }
        info.collection = .map
        info.typeDescription = "Map<String, \(info.typeDescription)>"
        return info
    }
    public static func _persistedDefault() -> Map<Key, Value> { Map() }

    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.document, key)
        let start = encoder.beginDocument()
        for (entryKey, value) in storage.map({ ($0.key._mapKeyString, $0.value) }).sorted(by: { $0.0 < $1.0 }) {
            guard isValidMapKey(entryKey) else { throw RealmError.invalidMapKey(path: key.name, key: entryKey) }
            try value._encodeBSON(key: EncodedKey(entryKey), into: &encoder)
        }
        encoder.endDocument(start)
    }

    /// Accepts a `Map` or a dictionary with String keys.
    public static func _fromCreateValue(_ value: Any) -> Map<Key, Value>? {
        if let map = value as? Map<Key, Value> { return map }
        if let dictionary = value as? [Key: Value] { return Map(dictionary) }
        guard let dictionary = value as? [Key: Any] else { return nil }
        var converted: [Key: Value] = [:]
        for (key, element) in dictionary {
            guard let element = Value._fromCreateValue(element) else { return nil }
            converted[key] = element
        }
        return Map(converted)
    }

    public static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
    {
        if let map = value as? Map<Key, Value> {
            try map._encodeBSON(key: key, into: &encoder)
            return
        }
        guard let dictionary = value as? [String: Any] else {
            throw RealmError.wrongValueType(path: path(), expected: _persistedInfo.typeDescription, found: value)
        }
        encoder.key(BSONType.document, key)
        let start = encoder.beginDocument()
        for (entryKey, element) in dictionary.sorted(by: { $0.key < $1.key }) {
            guard isValidMapKey(entryKey) else { throw RealmError.invalidMapKey(path: path(), key: entryKey) }
            try Value._encodeCreateValue(element, key: EncodedKey(entryKey), path: { "\(path()).\(entryKey)" }, into: &encoder)
        }
        encoder.endDocument(start)
    }
}
