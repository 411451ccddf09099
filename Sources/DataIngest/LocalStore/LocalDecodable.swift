import Foundation
import IngestCore

/// Reads objects back from stored documents: each `@Persisted` value type
/// converts its BSON form back to the Swift value. Used only by local realms.
protocol LocalDecodable {
    /// The value of `bson`, or `nil` when `bson` is not a form of this type.
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) throws(RealmError) -> Self?
}

/// What decoding needs beyond the value: the store (to follow links) and
/// the objects already made in this read (links to one object share it,
/// and cycles end).
final class LocalDecodingContext {
    /// The realm whose store links are read from; nil for values that
    /// become unmanaged objects (``ObjectBase/init(value:)``).
    private let store: (realm: Realm, access: LocalStoreAccess, local: LocalRealmStore)?
    let resolver: TypeResolver
    private var made: [String: ObjectBase] = [:]
    private var depth = 0
    /// Links are followed this deep; deeper links read as nil.
    static let maximumLinkDepth = 32

    init(realm: Realm, access: LocalStoreAccess, local: LocalRealmStore) {
        self.store = (realm, access, local)
        self.resolver = realm.resolver
    }

    /// Decodes into unmanaged objects, with no store to follow links in.
    init(resolver: TypeResolver) {
        self.store = nil
        self.resolver = resolver
    }

    /// A managed object of `typeSchema` from a stored row.
    func object(_ row: LocalStoreRow, _ typeSchema: TypeSchema) throws(RealmError) -> ObjectBase {
        let key = "\(typeSchema.className)#\(row.rowID)"
        if let existing = made[key] { return existing }
        let object = typeSchema.type.init()
        made[key] = object
        try fill(object, typeSchema, from: row.document)
        // Read inside a write transaction, its snapshot may hold uncommitted
        // values: if the transaction is rolled back, it becomes unmanaged.
        if let local = store?.local {
            local.manage(object, typeSchema: typeSchema, rowID: row.rowID, snapshot: row.document, added: local.inTransaction)
        }
        return object
    }

    /// Sets the properties of `object` present in `document`.
    func fill(_ object: ObjectBase, _ typeSchema: TypeSchema, from document: BSONDocument) throws(RealmError) {
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        defer { withExtendedLifetime(object) {} }
        for codec in typeSchema.codecs {
            guard let value = document[codec.storedName], let decoder = codec as? LocalFieldDecoder else { continue }
            try decoder.localDecode(value, into: base, className: typeSchema.className, context: self)
        }
    }

    /// The object a link points to, by its primary key.
    func linked(_ type: ObjectBase.Type, primaryKey: BSON) throws(RealmError) -> ObjectBase? {
        if case .null = primaryKey { return nil }
        guard let access = store?.access else {
            throw RealmError(
                .wrongValueType, className: type.className(),
                message:
                    "init(value:) cannot set a link to \(type.className()) from a value: it makes an unmanaged object, with no realm to find the target in; leave the link out of the value and assign the object after init"
            )
        }
        guard depth < Self.maximumLinkDepth else { return nil }
        depth += 1
        defer { depth -= 1 }
        let typeSchema = try resolver.schema(for: type)
        let row: LocalStoreRow?
        do throws(LocalStoreError) {
            row = try access.object(typeSchema.className, primaryKey: primaryKey)
        } catch {
            throw RealmError(local: error)
        }
        guard let row else { return nil }
        return try object(row, typeSchema)
    }
}

/// Implemented by the property codecs: decode one stored value into the
/// field of an object.
protocol LocalFieldDecoder {
    func localDecode(_ value: BSON, into base: UnsafeMutableRawPointer, className: String, context: LocalDecodingContext) throws(RealmError)
}

extension TypedPropertyCodec: LocalFieldDecoder {
    func localDecode(_ value: BSON, into base: UnsafeMutableRawPointer, className: String, context: LocalDecodingContext) throws(RealmError)
    {
        guard let type = Value.self as? any LocalDecodable.Type,
            let decoded = try type._localDecode(value, context) as? Value
        else {
            throw RealmError(
                .localStoreFailed, className: className, propertyName: storedName,
                message:
                    "\(className).\(storedName): the stored \(value.localTypeName) cannot be read as \(Value.self); the file was changed outside DataIngest or is damaged"
            )
        }
        base.advanced(by: offset).assumingMemoryBound(to: Persisted<Value>.self).pointee.storage = decoded
    }
}

// MARK: Scalars

extension Bool: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Bool? {
        if case .bool(let value) = bson { return value }
        return nil
    }
}

private func localInteger(_ bson: BSON) -> Int64? {
    switch bson {
    case .int64(let value): return value
    case .int32(let value): return Int64(value)
    default: return nil
    }
}

extension Int: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Int? { localInteger(bson).flatMap { Int(exactly: $0) } }
}
extension Int8: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Int8? { localInteger(bson).flatMap { Int8(exactly: $0) } }
}
extension Int16: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Int16? { localInteger(bson).flatMap { Int16(exactly: $0) } }
}
extension Int32: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Int32? { localInteger(bson).flatMap { Int32(exactly: $0) } }
}
extension Int64: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Int64? { localInteger(bson) }
}

extension Float: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Float? {
        if case .double(let value) = bson { return Float(value) }
        return nil
    }
}

extension Double: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Double? {
        if case .double(let value) = bson { return value }
        return nil
    }
}

extension String: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> String? {
        if case .string(let value) = bson { return value }
        return nil
    }
}

extension Data: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Data? {
        if case .binary(let binary) = bson, binary.subtype == BSONBinary.Subtype.generic { return Data(binary.bytes) }
        return nil
    }
}

extension Date: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Date? {
        if case .datetime(let milliseconds) = bson { return Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
        return nil
    }
}

extension Decimal128: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> Decimal128? {
        if case .decimal128(let value) = bson { return value }
        return nil
    }
}

extension ObjectId: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> ObjectId? {
        if case .objectId(let value) = bson { return value }
        return nil
    }
}

extension UUID: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> UUID? {
        guard case .binary(let binary) = bson, binary.subtype == BSONBinary.Subtype.uuid, binary.bytes.count == 16 else { return nil }
        return binary.bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }
}

extension AnyRealmValue: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) -> AnyRealmValue? {
        switch bson {
        case .null: return AnyRealmValue.none
        case .bool(let value): return .bool(value)
        case .int64(let value): return Int(exactly: value).map { .int($0) }
        case .int32(let value): return .int(Int(value))
        case .double(let value): return .double(value)
        case .string(let value): return .string(value)
        case .datetime: return Date._localDecode(bson, context).map { .date($0) }
        case .objectId(let value): return .objectId(value)
        case .decimal128(let value): return .decimal128(value)
        case .binary(let binary):
            if binary.subtype == BSONBinary.Subtype.uuid { return UUID._localDecode(bson, context).map { .uuid($0) } }
            if binary.subtype == BSONBinary.Subtype.generic { return .data(Data(binary.bytes)) }
            return nil
        case .array(let elements):
            var values: [AnyRealmValue] = []
            for element in elements {
                guard let value = _localDecode(element, context) else { return nil }
                values.append(value)
            }
            return .list(values)
        case .document(let document):
            var values: [String: AnyRealmValue] = [:]
            for field in document {
                guard let value = _localDecode(field.value, context) else { return nil }
                values[field.key] = value
            }
            return .dictionary(values)
        default:
            return nil
        }
    }
}

// MARK: Optionals and collections

extension Optional: LocalDecodable where Wrapped: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) throws(RealmError) -> Wrapped?? {
        if case .null = bson { return .some(nil) }
        // A link whose target was deleted reads as nil, not as damage.
        if Wrapped.self is Object.Type { return .some(try Wrapped._localDecode(bson, context)) }
        guard let value = try Wrapped._localDecode(bson, context) else { return nil }
        return .some(value)
    }
}

extension List: LocalDecodable where Element: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) throws(RealmError) -> List<Element>? {
        guard case .array(let elements) = bson else { return nil }
        var values: [Element] = []
        values.reserveCapacity(elements.count)
        let links = Element.self is Object.Type
        for element in elements {
            guard let value = try Element._localDecode(element, context) else {
                if links { continue }  // links to deleted objects drop out of the list
                return nil
            }
            values.append(value)
        }
        return List(values)
    }
}

extension Map: LocalDecodable where Key == String, Value: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) throws(RealmError) -> Map<Key, Value>? {
        guard case .document(let document) = bson else { return nil }
        var values: [String: Value] = [:]
        for field in document {
            guard let value = try Value._localDecode(field.value, context) else { return nil }
            values[field.key] = value
        }
        return Map(values)
    }
}

// MARK: Objects

extension EmbeddedObject: LocalDecodable {
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) throws(RealmError) -> Self? {
        guard case .document(let document) = bson else { return nil }
        let object = Self()
        try context.fill(object, try context.resolver.schema(for: self), from: document)
        return object
    }
}

extension Object: LocalDecodable {
    /// A link: the stored value is the target's primary key. A link whose
    /// target is gone reads as nil.
    static func _localDecode(_ bson: BSON, _ context: LocalDecodingContext) throws(RealmError) -> Self? {
        try context.linked(self, primaryKey: bson) as? Self
    }
}
