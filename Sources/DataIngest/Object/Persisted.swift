import IngestCore

/// Declares a stored property of an ``Object``, ``EmbeddedObject`` or
/// ``AsymmetricObject``.
///
/// ```swift
/// class WeatherSensor: AsymmetricObject {
///     @Persisted(primaryKey: true) var _id: ObjectId
///     @Persisted(indexed: true) var deviceId: String
///     @Persisted var unit: String = "F"        // a default value
///     @Persisted var note: String?             // optional
///     @Persisted var samples: List<Double>
/// }
/// ```
///
/// A property declared without a value starts at its type's default (0,
/// "", false, nil, empty, a new `ObjectId`). In `create(_:value:)` with a
/// dictionary or array, a missing non-optional property is an error unless
/// it was declared with a value, is a collection, or is an `ObjectId`
/// primary key (which gets a new id).
@propertyWrapper
public struct Persisted<Value: PersistableValue> {
    var storage: Value
    let options: PersistedOptions

    /// The value.
    public var wrappedValue: Value {
        get { storage }
        set { storage = newValue }
    }

    /// A property with its type's default value.
    public init() {
        storage = Value._persistedDefault()
        options = []
    }

    /// A property with a default value: `@Persisted var unit = "F"`.
    public init(wrappedValue: Value) {
        storage = wrappedValue
        options = .explicitDefault
    }

    /// The primary key: `@Persisted(primaryKey: true) var _id: ObjectId`.
    public init(primaryKey: Bool) {
        storage = Value._persistedDefault()
        options = primaryKey ? .primaryKey : []
    }

    /// The primary key with a default value.
    public init(wrappedValue: Value, primaryKey: Bool) {
        storage = wrappedValue
        options = primaryKey ? [.primaryKey, .explicitDefault] : .explicitDefault
    }

    /// An indexed property: `@Persisted(indexed: true) var deviceId: String`.
    public init(indexed: Bool) {
        storage = Value._persistedDefault()
        options = indexed ? .indexed : []
    }

    /// An indexed property with a default value.
    public init(wrappedValue: Value, indexed: Bool) {
        storage = wrappedValue
        options = indexed ? [.indexed, .explicitDefault] : .explicitDefault
    }
}

/// Flags of one `@Persisted` declaration.
struct PersistedOptions: OptionSet {
    let rawValue: UInt8
    static let primaryKey = PersistedOptions(rawValue: 1)
    static let indexed = PersistedOptions(rawValue: 2)
    static let explicitDefault = PersistedOptions(rawValue: 4)
}

/// Lets schema derivation build a codec for a field whose type it only
/// knows as `Any.Type`.
protocol PersistedField {
    static func makeCodec(swiftName: String, storedName: String, offset: Int) -> PropertyCodec
}

extension Persisted: PersistedField {
    static func makeCodec(swiftName: String, storedName: String, offset: Int) -> PropertyCodec {
        TypedPropertyCodec<Value>.make(swiftName: swiftName, storedName: storedName, offset: offset)
    }
}
