import IngestCore

/// Derives the schema a Realm client declares with `AddTable` and
/// `AddColumn`, as an IngestCore ``Schema`` (for development mode), or checks
/// such declarations against an app's schema.
///
/// The mapping: Realm's int, bool, string, binary, timestamp, float, double,
/// decimal, ObjectId and UUID columns become `int`, `bool`, `string`, `data`,
/// `date`, `float`, `double`, `decimal128`, `objectId` and `uuid`; a mixed
/// column (declared with type null) `mixed`; a link column `object` naming
/// its target (an embedded class for embedded objects). Lists become `list`,
/// dictionaries (string keys) `map`, and sets `list` too: DataIngest stores a
/// set as a BSON array. Nullability becomes `optional`. Asymmetric tables
/// become `asymmetric` classes, embedded ones `embedded`, others `topLevel`;
/// the primary key comes first, then the columns in declaration order.
///
/// Declaring a table or column again the same way is allowed (every new
/// client file declares its whole schema); declaring it differently, or
/// erasing one, is an ``RealmIngestError/Code/invalidSchemaChange``. With
/// `allowsAdditions` false, a table or column the base schema lacks is one too.
///
/// ```swift
/// var builder = RealmSchemaBuilder()
/// for instruction in try ChangesetDecoder.decodeAll(firstChangeset) { try builder.apply(instruction) }
/// let schema = try builder.schema()   // SensorReading (asymmetric), Location (embedded)
/// ```
public struct RealmSchemaBuilder: Sendable {
    private var classes: [ObjectSchema]
    private var indexByName: [String: Int]
    /// Whether tables and columns the schema lacks may be added.
    public let allowsAdditions: Bool
    /// How many tables and columns the applied instructions added.
    public private(set) var additions = 0

    /// A builder starting from `base` (empty by default).
    public init(base: Schema? = nil, allowsAdditions: Bool = true) {
        classes = base?.objectSchemas ?? []
        indexByName = Dictionary(uniqueKeysWithValues: classes.enumerated().map { ($1.className, $0) })
        self.allowsAdditions = allowsAdditions
    }

    /// The schema so far.
    public func schema() throws(RealmIngestError) -> Schema {
        do { return try Schema(classes) } catch {
            throw RealmIngestError(.invalidSchemaChange, message: error.message)
        }
    }

    /// Applies a schema instruction; other instructions are ignored.
    /// - Returns: whether the instruction was a schema instruction.
    /// - Throws: ``RealmIngestError`` (`invalidSchemaChange`, `unsupportedType`).
    @discardableResult
    public mutating func apply(_ instruction: Instruction) throws(RealmIngestError) -> Bool {
        switch instruction {
        case .addTable(let table):
            try addTable(table)
        case .addColumn(let column):
            try addColumn(column)
        case .eraseTable(let table):
            throw RealmIngestError(
                .invalidSchemaChange, table: table,
                message:
                    "the client erases table \(table); this server does not erase tables (a breaking schema change): migrate the data on the server"
            )
        case .eraseColumn(let table, let field):
            throw RealmIngestError(
                .invalidSchemaChange, table: table, field: field,
                message:
                    "the client erases column \(table).\(field); this server does not erase columns (a breaking schema change): keep the property, or migrate on the server"
            )
        default:
            return false
        }
        return true
    }

    private mutating func addTable(_ table: AddTable) throws(RealmIngestError) {
        let kind: ObjectSchema.Kind
        switch table.type {
        case .topLevel: kind = .topLevel
        case .embedded: kind = .embedded
        case .asymmetric: kind = .asymmetric
        }
        var properties: [Property] = []
        if let key = table.primaryKey {
            guard let type = Self.propertyType(key.type) else {
                throw RealmIngestError(
                    .unsupportedType, table: table.table, field: key.field,
                    message: "\(table.table).\(key.field): a \(key.type) primary key is not supported; use ObjectId, string, int or UUID")
            }
            properties.append(Property(name: key.field, type: type, isOptional: key.isNullable, isPrimaryKey: true))
        }
        if let index = indexByName[table.table] {
            let existing = classes[index]
            guard existing.kind == kind, existing.primaryKeyProperty == properties.first else {
                let declared = "\(kind.rawValue) with primary key \(properties.first?.typeDescription ?? "none")"
                let known = "\(existing.kind.rawValue) with primary key \(existing.primaryKeyProperty?.typeDescription ?? "none")"
                throw RealmIngestError(
                    .invalidSchemaChange, table: table.table,
                    message:
                        "the client declares \(table.table) as \(declared), but the schema has it as \(known); change the app's model or the server's schema so they agree"
                )
            }
            return
        }
        guard allowsAdditions else {
            throw RealmIngestError(
                .invalidSchemaChange, table: table.table,
                message:
                    "the client declares the class \(table.table), which the app's schema does not have; add it to the schema (or run the app in development mode)"
            )
        }
        indexByName[table.table] = classes.count
        classes.append(ObjectSchema(className: table.table, kind: kind, properties: properties))
        additions += 1
    }

    private mutating func addColumn(_ column: AddColumn) throws(RealmIngestError) {
        guard let index = indexByName[column.table] else {
            throw RealmIngestError(
                .invalidSchemaChange, table: column.table, field: column.field,
                message: "the client adds column \(column.field) to \(column.table) before declaring the table")
        }
        let property = try Self.property(column)
        if let existing = classes[index][property: column.field] {
            guard existing.type == property.type, existing.isOptional == property.isOptional,
                existing.collection == property.collection, existing.objectClassName == property.objectClassName
            else {
                throw RealmIngestError(
                    .invalidSchemaChange, table: column.table, field: column.field,
                    message:
                        "the client declares \(column.table).\(column.field) as \(property.typeDescription), but the schema has \(existing.typeDescription); make the app's model and the schema agree"
                )
            }
            return
        }
        guard allowsAdditions else {
            throw RealmIngestError(
                .invalidSchemaChange, table: column.table, field: column.field,
                message:
                    "the client declares \(column.table).\(column.field), which the app's schema does not have; add the property to the schema (or run the app in development mode)"
            )
        }
        classes[index].properties.append(property)
        additions += 1
    }

    /// The property an `AddColumn` declares.
    static func property(_ column: AddColumn) throws(RealmIngestError) -> Property {
        func unsupported(_ what: String) -> RealmIngestError {
            RealmIngestError(
                .unsupportedType, table: column.table, field: column.field,
                message: "\(column.table).\(column.field): \(what) is not supported by this server")
        }
        let type: PropertyType
        if column.type == .link {
            type = .object
        } else if let scalar = propertyType(column.type) {
            type = scalar
        } else {
            throw unsupported("a column of type \(column.type)")
        }
        let collection: CollectionKind
        switch column.collection {
        case .single: collection = .single
        case .list, .set: collection = .list
        case .dictionary:
            guard column.keyType == nil || column.keyType == .string else {
                throw unsupported("a dictionary with \(column.keyType.map { "\($0)" } ?? "no") keys")
            }
            collection = .map
        }
        if type == .object && (column.linkTarget ?? "").isEmpty {
            throw unsupported("a link column without a target")
        }
        return Property(
            name: column.field, type: type, isOptional: column.isNullable, collection: collection,
            objectClassName: type == .object ? column.linkTarget : nil)
    }

    /// The scalar property type of a Realm value type (nil for links and
    /// the special types).
    static func propertyType(_ type: PayloadType) -> PropertyType? {
        switch type {
        case .null: return .mixed
        case .int: return .int
        case .bool: return .bool
        case .string: return .string
        case .binary: return .data
        case .timestamp: return .date
        case .float: return .float
        case .double: return .double
        case .decimal: return .decimal128
        case .objectId: return .objectId
        case .uuid: return .uuid
        case .set, .list, .erased, .dictionary, .objectValue, .globalKey, .link: return nil
        }
    }
}
