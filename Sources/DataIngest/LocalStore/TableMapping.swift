import IngestCore
import IngestSupport

/// How one top-level class is stored: a table named after the class, one
/// column per property (named after the stored property name), the primary
/// key as the table's primary key (types without one use SQLite's rowid).
struct TableMapping: Sendable {
    struct Column: Sendable {
        let property: Property
        let storage: ColumnStorage
        let quotedName: String
    }

    let objectSchema: ObjectSchema
    let className: String
    let quotedTable: String
    let columns: [Column]
    let columnIndex: [String: Int]
    let primaryKeyIndex: Int?
    /// `rowid, "a", "b", …` in property order.
    let selectList: String

    init(_ object: ObjectSchema, in schema: Schema) throws(LocalStoreError) {
        objectSchema = object
        className = object.className
        quotedTable = try Self.quote(object.className, what: "class name", className: object.className)
        var columns: [Column] = []
        var index: [String: Int] = [:]
        for property in object.properties {
            index[property.name] = columns.count
            columns.append(
                Column(
                    property: property, storage: ColumnStorage.of(property, in: schema),
                    quotedName: try Self.quote(property.name, what: "property name", className: object.className)))
        }
        self.columns = columns
        columnIndex = index
        primaryKeyIndex = object.properties.firstIndex(where: \.isPrimaryKey)
        selectList = (["rowid"] + columns.map(\.quotedName)).joined(separator: ", ")
    }

    var primaryKey: Column? { primaryKeyIndex.map { columns[$0] } }

    func column(named name: String) -> Column? { columnIndex[name].map { columns[$0] } }

    /// `CREATE TABLE` for this class.
    var createTableSQL: String {
        let definitions = columns.map { column in
            "\(column.quotedName) \(column.storage.sqlType)\(column.property.isPrimaryKey ? " PRIMARY KEY NOT NULL" : "")"
        }
        return "CREATE TABLE \(quotedTable) (\(definitions.joined(separator: ", ")))"
    }

    /// The name of the index on `property`.
    func indexName(_ property: String) -> String {
        "\"" + "idx_\(className)_\(property)".replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `CREATE INDEX` statements for indexed properties.
    var createIndexSQL: [String] {
        columns.filter { $0.property.isIndexed && !$0.property.isPrimaryKey }.map { column in
            "CREATE INDEX IF NOT EXISTS \(indexName(column.property.name)) ON \(quotedTable) (\(column.quotedName))"
        }
    }

    /// A SQL identifier in double quotes. Names come from the schema (class
    /// and property names), never from query values; NUL and SQLite's
    /// reserved prefix are rejected so that quoting is always sufficient.
    static func quote(_ name: String, what: String, className: String) throws(LocalStoreError) -> String {
        if name.isEmpty || name.utf8.contains(0) {
            throw LocalStoreError(
                .invalidProperty, className: className,
                message: "\(className): the \(what) '\(name)' cannot be a table or column name (it is empty or contains NUL); rename it")
        }
        if name.lowercased().hasPrefix("sqlite_") || name.hasPrefix(LocalStore.reservedPrefix) {
            throw LocalStoreError(
                .invalidProperty, className: className,
                message:
                    "\(className): the \(what) '\(name)' starts with a prefix reserved for SQLite or DataIngest; rename it (override className() or use propertiesMapping())"
            )
        }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Rows and documents

    /// The column values of `document` (validated), in column order.
    func values(of document: BSONDocument) throws(LocalStoreError) -> [SQLiteValue] {
        var values: [SQLiteValue] = []
        values.reserveCapacity(columns.count)
        for column in columns {
            values.append(try value(document[column.property.name] ?? .null, for: column))
        }
        return values
    }

    func value(_ value: BSON, for column: Column) throws(LocalStoreError) -> SQLiteValue {
        guard let sql = column.storage.sqlValue(value) else {
            throw LocalStoreError(
                .invalidDocument, className: className, propertyName: column.property.name,
                message:
                    "\(className).\(column.property.name): a \(value.localTypeName) cannot be stored in a \(column.property.typeDescription) property; pass a value of the property's type"
            )
        }
        return sql
    }

    /// The row (`rowid` first, then the columns) as a stored row.
    func row(from values: [SQLiteValue]) throws(LocalStoreError) -> LocalStoreRow {
        guard values.count == columns.count + 1, case .integer(let rowID) = values[0] else {
            throw LocalStoreError(
                .corruptValue, className: className,
                message: "\(className): a row has an unexpected shape; the file was changed outside DataIngest")
        }
        var document = BSONDocument()
        for (offset, column) in columns.enumerated() {
            document.append(
                column.property.name,
                try column.storage.bsonValue(values[offset + 1], property: column.property, className: className))
        }
        return LocalStoreRow(rowID: rowID, document: document)
    }
}

extension BSON {
    /// The BSON type name, for messages.
    var localTypeName: String {
        switch self {
        case .double: return "double"
        case .string: return "string"
        case .document: return "document"
        case .array: return "array"
        case .binary(let binary): return "binary (subtype \(binary.subtype))"
        case .objectId: return "objectId"
        case .bool: return "boolean"
        case .datetime: return "datetime"
        case .null: return "null"
        case .int32: return "int32"
        case .int64: return "int64"
        case .decimal128: return "decimal128"
        default: return "BSON value of an unsupported type"
        }
    }
}
