import IngestCore
import IngestSupport

/// How one property is stored in its SQLite column. See Docs/LocalRealms.md
/// for the table; the rule is one typed column per scalar property and a
/// BSON blob (`{"v": value}`) for lists, maps, embedded objects and mixed
/// values.
indirect enum ColumnStorage: Sendable, Hashable {
    /// 0 or 1.
    case bool
    /// A 64-bit integer.
    case int
    /// A double (Float values are stored widened, exactly).
    case real
    /// UTF-8 text.
    case text
    /// Bytes.
    case data
    /// Whole milliseconds since 1970 (the BSON datetime value), as INTEGER.
    case date
    /// The canonical decimal string of the value, as TEXT.
    case decimal128
    /// The 12 bytes.
    case objectId
    /// The 16 bytes.
    case uuid
    /// A link: the target's primary key, stored as that key's storage.
    case link(ColumnStorage)
    /// A BSON document `{"v": value}`: lists, maps, embedded objects, mixed.
    case bson

    /// The declared SQLite column type.
    var sqlType: String {
        switch self {
        case .bool, .int, .date: return "INTEGER"
        case .real: return "REAL"
        case .text, .decimal128: return "TEXT"
        case .data, .objectId, .uuid, .bson: return "BLOB"
        case .link(let key): return key.sqlType
        }
    }

    /// The storage of a property of `property.type` (for a single value).
    static func of(_ property: Property, in schema: Schema) -> ColumnStorage {
        if property.collection != .single { return .bson }
        switch property.type {
        case .bool: return .bool
        case .int: return .int
        case .float, .double: return .real
        case .string: return .text
        case .data: return .data
        case .date: return .date
        case .decimal128: return .decimal128
        case .objectId: return .objectId
        case .uuid: return .uuid
        case .mixed: return .bson
        case .object:
            if let target = property.objectClassName.flatMap({ schema[$0] }), target.kind == .topLevel,
                let key = target.primaryKeyProperty
            {
                return .link(of(key, in: schema))
            }
            return .bson
        }
    }

    /// Whether the column can be compared in a query.
    var isQueryable: Bool {
        if case .bson = self { return false }
        return true
    }

    /// Whether `<`, `>` and sorting are meaningful.
    var isOrdered: Bool {
        switch self {
        case .int, .real, .text, .date, .objectId: return true
        case .link(let key): return key.isOrdered
        default: return false
        }
    }

    // MARK: BSON → SQL

    /// The column value for a (validated) non-null BSON value; `nil` when the
    /// value is not a form of this storage.
    func sqlValue(_ value: BSON) -> SQLiteValue? {
        switch (self, value) {
        case (_, .null): return .null
        case (.bool, .bool(let flag)): return .integer(flag ? 1 : 0)
        case (.int, .int64(let number)), (.date, .datetime(let number)): return .integer(number)
        case (.int, .int32(let number)): return .integer(Int64(number))
        case (.real, .double(let number)): return .real(number)
        case (.text, .string(let text)): return .text(text)
        case (.data, .binary(let binary)) where binary.subtype == BSONBinary.Subtype.generic: return .blob(binary.bytes)
        case (.decimal128, .decimal128(let decimal)): return .text(decimal.description)
        case (.objectId, .objectId(let id)): return .blob(id.bytes)
        case (.uuid, .binary(let binary)) where binary.subtype == BSONBinary.Subtype.uuid && binary.bytes.count == 16:
            return .blob(binary.bytes)
        case (.link(let key), _): return key.sqlValue(value)
        case (.bson, _): return .blob(BSONDocument(fields: [.init(key: "v", value: value)]).bsonBytes())
        default: return nil
        }
    }

    // MARK: SQL → BSON

    /// The BSON value of a stored column value for `property`; throws when
    /// the stored value is not of the column's type (a damaged file).
    func bsonValue(_ value: SQLiteValue, property: Property, className: String) throws(LocalStoreError) -> BSON {
        switch (self, value) {
        case (.bson, .null):
            switch property.collection {
            case .list: return .array([])
            case .map: return .document(BSONDocument())
            case .single: return .null
            }
        case (_, .null): return .null
        case (.bool, .integer(let number)): return .bool(number != 0)
        case (.int, .integer(let number)): return .int64(number)
        case (.real, .real(let number)): return .double(number)
        case (.real, .integer(let number)): return .double(Double(number))  // SQLite may store integral REALs as INTEGER
        case (.text, .text(let text)): return .string(text)
        case (.data, .blob(let bytes)): return .binary(BSONBinary(subtype: BSONBinary.Subtype.generic, bytes: bytes))
        case (.date, .integer(let number)): return .datetime(number)
        case (.decimal128, .text(let text)):
            if let decimal = try? Decimal128(parsing: text) { return .decimal128(decimal) }
        case (.objectId, .blob(let bytes)) where bytes.count == 12: return .objectId(ObjectId(bytes: bytes))
        case (.uuid, .blob(let bytes)) where bytes.count == 16:
            return .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: bytes))
        case (.link(let key), _): return try key.bsonValue(value, property: property, className: className)
        case (.bson, .blob(let bytes)):
            if let document = try? BSONDocument(bson: bytes), let inner = document["v"] { return inner }
        default: break
        }
        throw LocalStoreError(
            .corruptValue, className: className, propertyName: property.name,
            message:
                "\(className).\(property.name): the stored value \(value.summary) is not a \(property.typeDescription); the file was changed outside DataIngest or is damaged"
        )
    }
}
