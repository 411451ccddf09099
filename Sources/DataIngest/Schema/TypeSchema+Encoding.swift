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
    /// property order. `path` names the value in errors.
    func encodeDocument(createValue value: Any, path: String, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        if let dictionary = value as? [String: Any] {
            try encodeDocument(dictionary: dictionary, path: path, into: &encoder)
        } else if let object = value as? ObjectBase, Swift.type(of: object) == self.type || isSubclass(Swift.type(of: object)) {
            try encodeDocument(object: object, into: &encoder)
        } else if let array = value as? [Any] {
            try encodeDocument(array: array, path: path, into: &encoder)
        } else {
            throw RealmError(
                .wrongValueType, className: className,
                message: "\(path): expected a [String: Any] dictionary, an array in property order or a \(type) instance, found \(RealmError.describe(value))")
        }
    }

    private func isSubclass(_ candidate: ObjectBase.Type) -> Bool {
        var current: AnyClass? = candidate
        while let now = current {
            if now == self.type { return true }
            current = class_getSuperclassPortable(now)
        }
        return false
    }

    private func encodeDocument(dictionary: [String: Any], path: String, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        for key in dictionary.keys where codecIndex[key] == nil {
            throw RealmError.unknownProperty(className: className, path: path, property: key,
                                             known: codecs.map(\.swiftName))
        }
        let start = encoder.beginDocument()
        let prototypeBase = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        for codec in codecs {
            let value = dictionary[codec.swiftName] ?? (codec.storedName == codec.swiftName ? nil : dictionary[codec.storedName])
            if let value {
                try codec.encode(createValue: value, path: "\(path).\(codec.swiftName)", key: codec.key, into: &encoder)
            } else {
                try codec.encodeMissing(prototype: prototypeBase, className: className, into: &encoder)
            }
        }
        encoder.endDocument(start)
    }

    private func encodeDocument(array: [Any], path: String, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        guard array.count <= codecs.count else {
            throw RealmError(
                .wrongValueType, className: className,
                message: "\(path): the array has \(array.count) values but \(className) has \(codecs.count) properties (\(codecs.map(\.swiftName).joined(separator: ", "))); pass at most one value per property, in declaration order")
        }
        let start = encoder.beginDocument()
        let prototypeBase = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        for (position, codec) in codecs.enumerated() {
            if position < array.count {
                try codec.encode(createValue: array[position], path: "\(path).\(codec.swiftName)", key: codec.key, into: &encoder)
            } else {
                try codec.encodeMissing(prototype: prototypeBase, className: className, into: &encoder)
            }
        }
        encoder.endDocument(start)
    }

    /// The primary key of a create value (already encoded successfully).
    func primaryKey(createValue value: Any) -> PrimaryKeyValue? {
        guard let index = primaryKeyIndex else { return nil }
        let codec = codecs[index]
        if let dictionary = value as? [String: Any] {
            guard let key = dictionary[codec.swiftName] ?? dictionary[codec.storedName] else { return nil }
            return codec.primaryKey(createValue: key)
        }
        if let object = value as? ObjectBase {
            return primaryKey(object: object)
        }
        if let array = value as? [Any], index < array.count {
            return codec.primaryKey(createValue: array[index])
        }
        return nil
    }

    /// The primary key of an instance.
    func primaryKey(object: ObjectBase) -> PrimaryKeyValue? {
        guard let index = primaryKeyIndex else { return nil }
        defer { withExtendedLifetime(object) {} }
        return codecs[index].primaryKey(objectAt: UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()))
    }
}

/// The superclass of a Swift class, without the Objective-C runtime.
private func class_getSuperclassPortable(_ type: AnyClass) -> AnyClass? {
    _getSuperclass(type)
}
