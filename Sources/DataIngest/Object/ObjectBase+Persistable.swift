import IngestCore

// Object-typed properties: an EmbeddedObject is stored as an embedded
// document, an Object (a link) as its primary key value. AsymmetricObject
// does not conform, so nothing can declare a link to one.

extension EmbeddedObject: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo {
        var info = PersistedValueInfo(.object, String(describing: self))
        info.objectType = self
        return info
    }
    public static func _persistedDefault() -> Self { Self() }

    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        let schema = try encoder.types.schema(for: type(of: self))
        encoder.key(BSONType.document, key)
        try schema.encodeDocument(object: self, into: &encoder)
    }

    public static func _fromCreateValue(_ value: Any) -> Self? { value as? Self }

    /// Accepts an instance, a `[String: Any]` or an array in property order.
    public static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
    {
        let schema = try encoder.types.schema(for: self)
        encoder.key(BSONType.document, key)
        _ = try schema.encodeDocument(createValue: value, path: path, into: &encoder)
    }
}

extension Object: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo {
        var info = PersistedValueInfo(.object, String(describing: self))
        info.objectType = self
        return info
    }
    public static func _persistedDefault() -> Self { Self() }

    /// A link: the target's primary key.
    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        let schema = try encoder.types.schema(for: type(of: self))
        guard let index = schema.primaryKeyIndex else { throw RealmError.linkWithoutPrimaryKey(schema.className) }
        let base = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        try schema.codecs[index].encode(objectAt: base, key: key, into: &encoder)
        withExtendedLifetime(self) {}
    }

    public static func _fromCreateValue(_ value: Any) -> Self? { value as? Self }

    /// Accepts an instance of the target or its primary key value.
    public static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
    {
        if let object = value as? Self {
            try object._encodeBSON(key: key, into: &encoder)
            return
        }
        let schema = try encoder.types.schema(for: self)
        guard let index = schema.primaryKeyIndex else { throw RealmError.linkWithoutPrimaryKey(schema.className) }
        try schema.codecs[index].encode(createValue: value, path: path, key: key, into: &encoder)
    }
}
