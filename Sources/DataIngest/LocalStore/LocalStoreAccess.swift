import Foundation
import IngestCore
import IngestSupport

/// The reads and writes of a ``LocalStore`` on one connection. The public
/// ``LocalStoreReader`` and ``LocalStoreTransaction`` wrap it.
struct LocalStoreAccess {
    let connection: SQLiteConnection
    let tables: [String: TableMapping]
    let schema: Schema

    func table(_ className: String) throws(LocalStoreError) -> TableMapping {
        if let table = tables[className] { return table }
        let reason: String
        switch schema[className]?.kind {
        case .embedded?: reason = "it is an embedded class; its objects live inside the objects that embed them"
        case .asymmetric?: reason = "it is an asymmetric (upload-only) class, which a local realm cannot hold"
        default: reason = "it is not in the schema (\(tables.keys.sorted().joined(separator: ", ")))"
        }
        throw LocalStoreError(
            .unknownClass, className: className, fileURL: connection.fileURL,
            message: "the local realm has no table for '\(className)': \(reason)")
    }

    // MARK: Reading

    func object(_ className: String, primaryKey: BSON) throws(LocalStoreError) -> LocalStoreRow? {
        let table = try table(className)
        guard let key = table.primaryKey else { throw missingPrimaryKey(table, "lookup by primary key") }
        let value = try table.bind(primaryKey, to: key, path: "\(className).\(key.property.name)")
        let rows = try connection.rows("SELECT \(table.selectList) FROM \(table.quotedTable) WHERE \(key.quotedName) = ?", [value])
        guard let row = rows.first else { return nil }
        return try table.row(from: row)
    }

    func object(_ className: String, rowID: Int64) throws(LocalStoreError) -> LocalStoreRow? {
        let table = try table(className)
        let rows = try connection.rows("SELECT \(table.selectList) FROM \(table.quotedTable) WHERE rowid = ?", [.integer(rowID)])
        guard let row = rows.first else { return nil }
        return try table.row(from: row)
    }

    func objects(_ query: LocalQuery) throws(LocalStoreError) -> [LocalStoreRow] {
        let table = try table(query.className)
        let select = try table.selectSQL(query)
        var result: [LocalStoreRow] = []
        for row in try connection.rows(select.sql, select.values) {
            result.append(try table.row(from: row))
        }
        return result
    }

    func count(_ query: LocalQuery) throws(LocalStoreError) -> Int {
        let table = try table(query.className)
        let condition = try table.whereClause(query)
        let rows = try connection.rows("SELECT count(*) FROM \(table.quotedTable)\(condition.sql)", condition.values)
        guard case .integer(let count)? = rows.first?.first else { return 0 }
        return query.limit.map { min($0, Int(count)) } ?? Int(count)
    }

    // MARK: Writing

    func insert(_ document: BSONDocument, into className: String, replacing: Bool) throws(LocalStoreError) -> Int64 {
        let table = try table(className)
        try validate(document, table)
        let values = try table.values(of: document)
        let names = table.columns.map(\.quotedName).joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
        var sql = "INSERT INTO \(table.quotedTable) (\(names)) VALUES (\(placeholders))"
        if replacing {
            guard let key = table.primaryKey else { throw missingPrimaryKey(table, "an upsert") }
            let updates = table.columns.filter { !$0.property.isPrimaryKey }
                .map { "\($0.quotedName) = excluded.\($0.quotedName)" }
            sql +=
                updates.isEmpty
                ? " ON CONFLICT (\(key.quotedName)) DO NOTHING"
                : " ON CONFLICT (\(key.quotedName)) DO UPDATE SET \(updates.joined(separator: ", "))"
            sql += " RETURNING rowid"
            let rows: [[SQLiteValue]]
            rows = try connection.rows(sql, values)
            if case .integer(let rowID)? = rows.first?.first { return rowID }
            // DO NOTHING on an existing key returns no row: look the row up.
            let existing = try connection.rows(
                "SELECT rowid FROM \(table.quotedTable) WHERE \(key.quotedName) = ?", [values[table.primaryKeyIndex!]])
            if case .integer(let rowID)? = existing.first?.first { return rowID }
            return 0
        }
        do throws(LocalStoreError) {
            try connection.run(sql, values)
        } catch  where error.sqliteCode == 1555 || error.sqliteCode == 2579 {  // SQLITE_CONSTRAINT_PRIMARYKEY, _ROWID
            let key = table.primaryKey!
            let shown = document[key.property.name].map { describe($0) } ?? "?"
            throw LocalStoreError(
                .duplicatePrimaryKey, className: className, propertyName: key.property.name, fileURL: connection.fileURL,
                sqliteCode: error.sqliteCode,
                message:
                    "\(className) already has an object with \(key.property.name) \(shown); update it instead (an upsert, or create with update: .modified / .all)"
            )
        }
        return connection.lastInsertRowID
    }

    func update(_ className: String, where condition: SQLFragment, fields: BSONDocument) throws(LocalStoreError) -> Int {
        let table = try table(className)
        guard !fields.isEmpty else { return 0 }
        // Validate the given fields only: a partial document misses required properties on purpose.
        let violations = schema.validate(fields, against: className).filter { $0.code != .missingRequiredField }
        if let first = violations.first { throw invalid(table, first, count: violations.count) }
        var assignments: [String] = []
        var values: [SQLiteValue] = []
        for field in fields {
            let column = table.column(named: field.key)!
            if column.property.isPrimaryKey {
                throw LocalStoreError(
                    .invalidDocument, className: className, propertyName: field.key,
                    message: "\(className).\(field.key) is the primary key and cannot be changed; delete the object and add a new one")
            }
            assignments.append("\(column.quotedName) = ?")
            values.append(try table.value(field.value, for: column))
        }
        return try connection.run(
            "UPDATE \(table.quotedTable) SET \(assignments.joined(separator: ", "))\(condition.sql)", values + condition.values)
    }

    func primaryKeyCondition(_ className: String, _ primaryKey: BSON) throws(LocalStoreError) -> SQLFragment {
        let table = try table(className)
        guard let key = table.primaryKey else { throw missingPrimaryKey(table, "this operation") }
        return SQLFragment(
            sql: " WHERE \(key.quotedName) = ?", values: [try table.bind(primaryKey, to: key, path: "\(className).\(key.property.name)")])
    }

    func delete(_ className: String, where condition: SQLFragment) throws(LocalStoreError) -> Int {
        let table = try table(className)
        return try connection.run("DELETE FROM \(table.quotedTable)\(condition.sql)", condition.values)
    }

    func delete(_ query: LocalQuery) throws(LocalStoreError) -> Int {
        let table = try table(query.className)
        if query.limit == nil && query.sort.isEmpty {
            return try delete(query.className, where: try table.whereClause(query))
        }
        let select = try table.selectSQL(query)
        return try connection.run("DELETE FROM \(table.quotedTable) WHERE rowid IN (SELECT rowid FROM (\(select.sql)))", select.values)
    }

    // MARK: Errors

    private func validate(_ document: BSONDocument, _ table: TableMapping) throws(LocalStoreError) {
        let violations = schema.validate(document, against: table.className)
        if let first = violations.first { throw invalid(table, first, count: violations.count) }
    }

    private func invalid(_ table: TableMapping, _ violation: SchemaViolation, count: Int) -> LocalStoreError {
        let more = count > 1 ? " (and \(count - 1) more)" : ""
        return LocalStoreError(
            .invalidDocument, className: table.className, propertyName: violation.path,
            message: "\(table.className).\(violation.path): \(violation.reason)\(more); pass values that match the class's schema")
    }

    private func missingPrimaryKey(_ table: TableMapping, _ what: String) -> LocalStoreError {
        LocalStoreError(
            .missingPrimaryKey, className: table.className, fileURL: connection.fileURL,
            message:
                "\(table.className) has no primary key, so \(what) is not possible; declare one (@Persisted(primaryKey: true)) or address objects by rowID"
        )
    }

    private func describe(_ value: BSON) -> String {
        switch value {
        case .string(let text): return "\"\(text)\""
        case .int64(let number): return String(number)
        case .int32(let number): return String(number)
        case .objectId(let id): return "ObjectId(\(id.hex))"
        case .binary(let binary) where binary.bytes.count == 16:
            return "UUID(\(UUID(uuid: binary.bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }).uuidString))"
        default: return value.localTypeName
        }
    }
}
