import IngestCore

extension TypeSchema {
    /// Encodes an instance as a BSON document (the element header, if any,
    /// is already written).
    func encodeDocument(object: ObjectBase, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        let start = encoder.beginDocument()
        defer { withExtendedLifetime(object) {} }
        try encodeFields(objectAt: UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()), into: &encoder)
        encoder.endDocument(start)
    }

    /// Encodes a value given to `create(_:value:)`: an instance of this
    /// class, a `[String: Any]` keyed by property name, or an `[Any]` in
    /// property order. `path()` names the value in errors (built only on
    /// error). Returns the primary key value, when one was given.
    func encodeDocument(createValue value: Any, path: () -> String, into encoder: inout BSONRecordEncoder) throws(RealmError)
        -> PrimaryKeyValue?
    {
        // The two usual forms by the container's metadata word alone: an
        // instance boxed as exactly this class, or a [String: Any].
        if readsExistentials {
            if let base = ExistentialPayload.instance(value, classWord: classWord) {
                let start = encoder.beginDocument()
                try encodeFields(objectAt: base, into: &encoder)
                encoder.endDocument(start)
                guard let index = primaryKeyIndex else { return nil }
                return codecs[index].primaryKey(objectAt: base)
            }
            let dictionary = ExistentialPayload.peek(value) { type, buffer in
                type == ExistentialPayload.typeWord([String: Any].self) ? buffer.load(as: [String: Any].self) : nil
            }
            if let dictionary {
                return try encodeDocument(dictionary: dictionary, path: path, into: &encoder)
            }
        }
        // Failing casts between a dictionary and a class are slow (the
        // runtime looks for bridging conformances), so the value's dynamic
        // type picks which cast to try.
        // The usual dictionary first, by an exact type match (no runtime
        // cast); the metatype comparison keeps this cheap for instances.
        if Swift.type(of: value) == [String: Any].self, let dictionary = exactly(value, as: [String: Any].self) {
            return try encodeDocument(dictionary: dictionary, path: path, into: &encoder)
        }
        let isClass = Swift.type(of: value) is AnyClass
        if isClass, let object = value as? ObjectBase,
            Swift.type(of: object) == self.type || isSubclass(Swift.type(of: object))
        {
            try encodeDocument(object: object, into: &encoder)
            return primaryKey(object: object)
        } else if !isClass, let dictionary = value as? [String: Any] {
            return try encodeDocument(dictionary: dictionary, path: path, into: &encoder)
        } else if !isClass, let array = value as? [Any] {
            return try encodeDocument(array: array, path: path, into: &encoder)
        } else {
            throw RealmError(
                .wrongValueType, className: className,
                message:
                    "\(path()): expected a [String: Any] dictionary, an array in property order or a \(type) instance, found \(RealmError.describe(value))"
            )
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

    private func encodeDocument(dictionary: [String: Any], path: () -> String, into encoder: inout BSONRecordEncoder) throws(RealmError)
        -> PrimaryKeyValue?
    {
        guard codecs.count <= 64 else { return try encodeDocumentByLookup(dictionary: dictionary, path: path, into: &encoder) }
        // One pass over the dictionary matches each key to its property
        // (no hashing) and moves the value into that property's slot; a
        // second pass encodes the slots in property order. Hashed lookups
        // of every property name cost more than the rest of create
        // together, and revisiting the dictionary by index costs an index
        // check and a copy per value.
        return try withUnsafeTemporaryAllocation(of: Any.self, capacity: codecs.count) { (slots) throws(RealmError) -> PrimaryKeyValue? in
            let slot = slots.baseAddress.unsafelyUnwrapped
            var given: UInt64 = 0  // bit n: property n has a value in slot n
            var bySwiftName: UInt64 = 0  // bit n: that value was given under the Swift name
            defer {
                for position in 0..<codecs.count where given & (UInt64(1) << UInt64(position)) != 0 {
                    (slot + position).deinitialize(count: 1)
                }
            }
            var unknown: String?
            for (key, value) in dictionary {
                if let match = fastKeyMatch(key) {
                    let bit = UInt64(1) << UInt64(match.codec)
                    // The Swift name wins when both names are given, as with lookups by name.
                    if given & bit == 0 {
                        (slot + match.codec).initialize(to: value)
                        given |= bit
                        if match.isSwiftName { bySwiftName |= bit }
                    } else if match.isSwiftName && bySwiftName & bit == 0 {
                        (slot + match.codec).pointee = value
                        bySwiftName |= bit
                    }
                } else if unknown == nil {
                    unknown = key
                }
            }
            let start = encoder.beginDocument()
            var primaryKey: PrimaryKeyValue?
            for position in 0..<fastProperties.count {
                if given & (UInt64(1) << UInt64(position)) != 0 {
                    if let key = try encodeCreateValue(
                        at: UnsafeRawPointer(slot + position), position: position, path: path, into: &encoder)
                    {
                        primaryKey = key
                    }
                } else {
                    let prototypeBase = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
                    try codecs[position].encodeMissing(prototype: prototypeBase, className: className, into: &encoder)
                }
            }
            if let unknown {
                throw RealmError.unknownProperty(className: className, path: path(), property: unknown, known: codecs.map(\.swiftName))
            }
            encoder.endDocument(start)
            return primaryKey
        }
    }

    /// Encodes the `create` value in the `Any` at `container` as the property
    /// at `position`: inline when the fast path takes it, otherwise through
    /// the property's codec, which converts or throws naming the property.
    /// Returns the primary key when that property is the primary key.
    @inline(__always)
    private func encodeCreateValue(
        at container: UnsafeRawPointer, position: Int, path: () -> String,
        into encoder: inout BSONRecordEncoder
    ) throws(RealmError) -> PrimaryKeyValue? {
        let property = fastProperties[position]
        let value = container.assumingMemoryBound(to: Any.self)
        if readsExistentials && encodeFast(at: container, kind: property.kind, key: property.key, into: &encoder) {
            guard position == primaryKeyIndex else { return nil }
            return fastPrimaryKey(at: container, kind: property.kind) ?? codecs[position].primaryKey(createValue: value.pointee)
        }
        let codec = codecs[position]
        try codec.encode(createValue: value.pointee, path: { "\(path()).\(codec.swiftName)" }, key: codec.key, into: &encoder)
        return position == primaryKeyIndex ? codec.primaryKey(createValue: value.pointee) : nil
    }

    /// The general path of ``encodeDocument(dictionary:path:into:)``, for
    /// types with more than 64 properties: one hashed lookup per property.
    private func encodeDocumentByLookup(dictionary: [String: Any], path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError) -> PrimaryKeyValue?
    {
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

    private func encodeDocument(array: [Any], path: () -> String, into encoder: inout BSONRecordEncoder) throws(RealmError)
        -> PrimaryKeyValue?
    {
        guard array.count <= codecs.count else {
            throw RealmError(
                .wrongValueType, className: className,
                message:
                    "\(path()): the array has \(array.count) values but \(className) has \(codecs.count) properties (\(codecs.map(\.swiftName).joined(separator: ", "))); pass at most one value per property, in declaration order"
            )
        }
        let start = encoder.beginDocument()
        let prototypeBase = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        var primaryKey: PrimaryKeyValue?
        for (position, codec) in codecs.enumerated() {
            if position < array.count {
                let key = try withUnsafePointer(to: array[position]) { (container) throws(RealmError) -> PrimaryKeyValue? in
                    try encodeCreateValue(at: UnsafeRawPointer(container), position: position, path: path, into: &encoder)
                }
                if let key { primaryKey = key }
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
