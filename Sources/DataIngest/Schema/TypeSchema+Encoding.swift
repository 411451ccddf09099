import IngestCore

extension TypeSchema {
    /// Encodes an instance as a BSON document (the element header, if any,
    /// is already written).
    func encodeDocument(object: ObjectBase, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        let start = encoder.beginDocument()
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for codec in codecs {
            try codec.encode(objectAt: base, key: codec.key, into: &encoder)
        }
        withExtendedLifetime(object) {}
        encoder.endDocument(start)
    }

    /// Encodes a value given to `create(_:value:)`: an instance of this
    /// class, a `[String: Any]` keyed by property name, or an `[Any]` in
    /// property order. `path()` names the value in errors (built only on
    /// error). Returns the primary key value, when one was given.
    func encodeDocument(createValue value: Any, path: () -> String, into encoder: inout BSONRecordEncoder) throws(RealmError) -> PrimaryKeyValue? {
        if let dictionary = value as? [String: Any] {
            return try encodeDocument(dictionary: dictionary, path: path, into: &encoder)
        } else if let object = value as? ObjectBase, Swift.type(of: object) == self.type || isSubclass(Swift.type(of: object)) {
            try encodeDocument(object: object, into: &encoder)
            return primaryKey(object: object)
        } else if let array = value as? [Any] {
            return try encodeDocument(array: array, path: path, into: &encoder)
        } else {
            throw RealmError(
                .wrongValueType, className: className,
                message: "\(path()): expected a [String: Any] dictionary, an array in property order or a \(type) instance, found \(RealmError.describe(value))")
        }
    }

    private func isSubclass(_ candidate: ObjectBase.Type) -> Bool {
        var current: AnyClass? = candidate
        while let now = current {
            if now == self.type { return true }
            current = _getSuperclass(now)
        }
        return false
    }

    private func encodeDocument(dictionary: [String: Any], path: () -> String, into encoder: inout BSONRecordEncoder) throws(RealmError) -> PrimaryKeyValue? {
        let start = encoder.beginDocument()
        let prototypeBase = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        var matched = 0
        var primaryKey: PrimaryKeyValue?
        for (position, codec) in codecs.enumerated() {
            let value = dictionary[codec.swiftName] ?? (codec.storedName == codec.swiftName ? nil : dictionary[codec.storedName])
            if let value {
                matched += 1
                try codec.encode(createValue: value, path: { "\(path()).\(codec.swiftName)" }, key: codec.key, into: &encoder)
                if position == primaryKeyIndex { primaryKey = codec.primaryKey(createValue: value) }
            } else {
                try codec.encodeMissing(prototype: prototypeBase, className: className, into: &encoder)
            }
        }
        // Every key matched a property, unless the counts differ.
        if matched != dictionary.count {
            for key in dictionary.keys where codecIndex[key] == nil {
                throw RealmError.unknownProperty(className: className, path: path(), property: key, known: codecs.map(\.swiftName))
            }
        }
        encoder.endDocument(start)
        return primaryKey
    }

    private func encodeDocument(array: [Any], path: () -> String, into encoder: inout BSONRecordEncoder) throws(RealmError) -> PrimaryKeyValue? {
        guard array.count <= codecs.count else {
            throw RealmError(
                .wrongValueType, className: className,
                message: "\(path()): the array has \(array.count) values but \(className) has \(codecs.count) properties (\(codecs.map(\.swiftName).joined(separator: ", "))); pass at most one value per property, in declaration order")
        }
        let start = encoder.beginDocument()
        let prototypeBase = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        var primaryKey: PrimaryKeyValue?
        for (position, codec) in codecs.enumerated() {
            if position < array.count {
                try codec.encode(createValue: array[position], path: { "\(path()).\(codec.swiftName)" }, key: codec.key, into: &encoder)
                if position == primaryKeyIndex { primaryKey = codec.primaryKey(createValue: array[position]) }
            } else {
                try codec.encodeMissing(prototype: prototypeBase, className: className, into: &encoder)
            }
        }
        encoder.endDocument(start)
        return primaryKey
    }

    /// The primary key of an instance.
    func primaryKey(object: ObjectBase) -> PrimaryKeyValue? {
        guard let index = primaryKeyIndex else { return nil }
        defer { withExtendedLifetime(object) {} }
        return codecs[index].primaryKey(objectAt: UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()))
    }
}
