import IngestCore

/// Reads and encodes one `@Persisted` property, built once per class from
/// the field's offset in the instance layout.
class PropertyCodec {
    let swiftName: String
    let storedName: String
    let key: EncodedKey
    let offset: Int
    /// Filled in from the prototype instance.
    var options: PersistedOptions = []

    init(swiftName: String, storedName: String, offset: Int) {
        self.swiftName = swiftName
        self.storedName = storedName
        self.key = EncodedKey(storedName)
        self.offset = offset
    }

    var info: PersistedValueInfo { fatalError("abstract") }
    func readOptions(_ base: UnsafeRawPointer) -> PersistedOptions { fatalError("abstract") }
    /// Encodes the property of the object at `base`.
    func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        fatalError("abstract")
    }
    /// Encodes a value given to `create(_:value:)`.
    func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        fatalError("abstract")
    }
    /// Encodes the value used when `create(_:value:)` omits the property.
    func encodeMissing(prototype: UnsafeRawPointer, className: String, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        fatalError("abstract")
    }
    /// The primary key value of the object at `base`.
    func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? { fatalError("abstract") }
    /// The primary key value given to `create(_:value:)`, converted.
    func primaryKey(createValue: Any) -> PrimaryKeyValue? { fatalError("abstract") }
}

class TypedPropertyCodec<Value: PersistableValue>: PropertyCodec {
    private let valueInfo = Value._persistedInfo

    override var info: PersistedValueInfo { valueInfo }

    @inline(__always)
    final func field(_ base: UnsafeRawPointer) -> UnsafePointer<Persisted<Value>> {
        base.advanced(by: offset).assumingMemoryBound(to: Persisted<Value>.self)
    }

    override func readOptions(_ base: UnsafeRawPointer) -> PersistedOptions { field(base).pointee.options }

    override func encode(objectAt base: UnsafeRawPointer, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try field(base).pointee.storage._encodeBSON(key: key, into: &encoder)
    }

    override func encode(createValue: Any, path: () -> String, key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        try Value._encodeCreateValue(createValue, key: key, path: path, into: &encoder)
    }

    override func encodeMissing(prototype: UnsafeRawPointer, className: String, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        if options.contains(.explicitDefault) {
            try field(prototype).pointee.storage._encodeBSON(key: key, into: &encoder)
        } else if valueInfo.isOptional || valueInfo.collection != .single
            || (options.contains(.primaryKey) && valueInfo.type == .objectId)
        {
            // nil, an empty collection, or a newly generated ObjectId.
            try Value._persistedDefault()._encodeBSON(key: key, into: &encoder)
        } else {
            throw RealmError.missingRequiredProperty(className: className, property: swiftName, type: valueInfo.typeDescription)
        }
    }

    override func primaryKey(objectAt base: UnsafeRawPointer) -> PrimaryKeyValue? {
        PrimaryKeyValue(field(base).pointee.storage)
    }

    override func primaryKey(createValue: Any) -> PrimaryKeyValue? {
        Value._fromCreateValue(createValue).flatMap { PrimaryKeyValue($0) }
    }
}
