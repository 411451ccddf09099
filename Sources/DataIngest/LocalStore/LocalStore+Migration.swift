import Foundation
import IngestCore
import IngestSupport

extension LocalStore {
    /// Creates the tables of a new file, or compares an existing file's
    /// stored schema with the app's and applies additive changes, all in
    /// one transaction.
    enum Migration {
        struct Outcome {
            var schemaVersion: UInt64
        }

        /// One difference between the stored and the app's schema.
        struct Change {
            var className: String
            var description: String
        }

        static func run(
            on connection: SQLiteConnection, schema: Schema, schemaVersion: UInt64,
            defaults: [String: BSONDocument]
        ) throws(LocalStoreError) -> Outcome {
            try connection.execute("BEGIN IMMEDIATE")
            do throws(LocalStoreError) {
                let outcome = try migrate(connection, schema: schema, schemaVersion: schemaVersion, defaults: defaults)
                try connection.execute("COMMIT")
                return outcome
            } catch {
                connection.rollback()
                throw error
            }
        }

        private static func migrate(
            _ connection: SQLiteConnection, schema: Schema, schemaVersion: UInt64,
            defaults: [String: BSONDocument]
        ) throws(LocalStoreError) -> Outcome {
            let url = connection.fileURL
            try connection.execute("CREATE TABLE IF NOT EXISTS \"\(metadataTable)\" (key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID")
            var stored: [String: SQLiteValue] = [:]
            for row in try connection.rows("SELECT key, value FROM \"\(metadataTable)\"") {
                if case .text(let key) = row[0] { stored[key] = row[1] }
            }

            guard case .blob(let schemaBytes)? = stored["schema"], case .integer(let storedVersionValue)? = stored["schemaVersion"] else {
                // A new file: every top-level class gets its table.
                for object in schema.objectSchemas where object.kind == .topLevel {
                    let table = try TableMapping(object, in: schema)
                    try connection.execute(table.createTableSQL)
                    for sql in table.createIndexSQL { try connection.execute(sql) }
                }
                try writeMetadata(connection, schema: schema, version: schemaVersion)
                return Outcome(schemaVersion: schemaVersion)
            }

            let storedSchema: Schema
            do {
                storedSchema = try Schema(bsonDocument: try BSONDocument(bson: schemaBytes))
            } catch {
                throw LocalStoreError(
                    .corruptMetadata, fileURL: url,
                    message:
                        "the schema stored in \(url.path) cannot be read (\(error)); the file was not written by DataIngest or is damaged")
            }
            let storedVersion = UInt64(bitPattern: storedVersionValue)

            // Destructive changes are reported whatever the version says.
            var changes: [Change] = []
            var statements: [SQLFragment] = []
            var addsClasses = false
            for object in schema.objectSchemas {
                guard let old = storedSchema[object.className] else {
                    // A new class changes no existing data: no version increase needed.
                    addsClasses = true
                    if object.kind == .topLevel {
                        let table = try TableMapping(object, in: schema)
                        statements.append(SQLFragment(sql: table.createTableSQL, values: []))
                        statements += table.createIndexSQL.map { SQLFragment(sql: $0, values: []) }
                    }
                    continue
                }
                try compare(
                    old: old, new: object, schema: schema, defaults: defaults[object.className] ?? [:], url: url,
                    changes: &changes, statements: &statements)
            }

            if schemaVersion < storedVersion {
                throw LocalStoreError(
                    .schemaVersionMismatch, fileURL: url,
                    message:
                        "\(url.lastPathComponent) has schema version \(storedVersion), newer than this configuration's schemaVersion \(schemaVersion); open it with schemaVersion \(storedVersion) or higher (a newer version of the app wrote it)"
                )
            }
            if !changes.isEmpty && schemaVersion == storedVersion {
                let first = changes[0]
                throw LocalStoreError(
                    .schemaVersionMismatch, className: first.className, fileURL: url,
                    message:
                        "the schema changed (\(changes.map(\.description).joined(separator: "; "))) but schemaVersion is still \(storedVersion); increase schemaVersion to \(storedVersion + 1) to migrate \(url.lastPathComponent)"
                )
            }
            guard schemaVersion > storedVersion || addsClasses else { return Outcome(schemaVersion: storedVersion) }

            for statement in statements {
                try connection.run(statement.sql, statement.values)
            }
            // Classes the app no longer lists keep their tables and their stored schema.
            var merged = schema.objectSchemas
            for old in storedSchema.objectSchemas where schema[old.className] == nil { merged.append(old) }
            let mergedSchema: Schema
            do {
                mergedSchema = try Schema(merged)
            } catch {
                throw LocalStoreError(.corruptMetadata, fileURL: url, message: error.message)
            }
            try writeMetadata(connection, schema: mergedSchema, version: schemaVersion)
            return Outcome(schemaVersion: schemaVersion)
        }

        private static func compare(
            old: ObjectSchema, new: ObjectSchema, schema: Schema, defaults: BSONDocument, url: URL,
            changes: inout [Change], statements: inout [SQLFragment]
        ) throws(LocalStoreError) {
            let name = new.className
            func destructive(_ property: String?, _ what: String) -> LocalStoreError {
                LocalStoreError(
                    .destructiveMigration, className: name, propertyName: property, fileURL: url,
                    message:
                        "\(name)\(property.map { ".\($0)" } ?? ""): \(what). A local realm migrates only additively (new classes, new optional properties, properties with a default value, indexes), so its data would be lost; restore the previous declaration, or delete \(url.path) to start over with an empty realm"
                )
            }
            if old.kind != new.kind {
                throw destructive(nil, "the class changed from \(old.kind.rawValue) to \(new.kind.rawValue)")
            }
            if old.primaryKey != new.primaryKey {
                throw destructive(
                    new.primaryKey ?? old.primaryKey,
                    "the primary key changed from \(old.primaryKey.map { "'\($0)'" } ?? "none") to \(new.primaryKey.map { "'\($0)'" } ?? "none")"
                )
            }
            for property in old.properties where new[property: property.name] == nil {
                throw destructive(property.name, "the \(property.typeDescription) property '\(property.name)' was removed")
            }
            let table = new.kind == .topLevel ? try TableMapping(new, in: schema) : nil
            for property in new.properties {
                guard let previous = old[property: property.name] else {
                    changes.append(Change(className: name, description: "\(name).\(property.name) was added"))
                    guard let table, let column = table.column(named: property.name) else { continue }
                    let fillsItself = property.isOptional || property.collection != .single || property.type == .mixed
                    let fill = defaults[property.name]
                    if !fillsItself && fill == nil {
                        throw LocalStoreError(
                            .destructiveMigration, className: name, propertyName: property.name, fileURL: url,
                            message:
                                "\(name).\(property.name): the new required \(property.typeDescription) property has no value for the existing objects; declare a default value (@Persisted var \(property.name) = …) or make it optional"
                        )
                    }
                    statements.append(
                        SQLFragment(
                            sql: "ALTER TABLE \(table.quotedTable) ADD COLUMN \(column.quotedName) \(column.storage.sqlType)", values: []))
                    if let fill, !fillsItself || fill != .null {
                        statements.append(
                            SQLFragment(
                                sql: "UPDATE \(table.quotedTable) SET \(column.quotedName) = ?",
                                values: [try table.value(fill, for: column)]))
                    }
                    if property.isIndexed {
                        statements.append(
                            SQLFragment(
                                sql:
                                    "CREATE INDEX IF NOT EXISTS \(table.indexName(property.name)) ON \(table.quotedTable) (\(column.quotedName))",
                                values: []))
                    }
                    continue
                }
                if previous.type != property.type || previous.collection != property.collection
                    || previous.isOptional != property.isOptional || previous.objectClassName != property.objectClassName
                {
                    throw destructive(
                        property.name, "the property changed type from \(previous.typeDescription) to \(property.typeDescription)")
                }
                if previous.isIndexed != property.isIndexed, let table, let column = table.column(named: property.name),
                    !property.isPrimaryKey
                {
                    changes.append(
                        Change(className: name, description: "\(name).\(property.name) \(property.isIndexed ? "gained" : "lost") its index")
                    )
                    statements.append(
                        SQLFragment(
                            sql: property.isIndexed
                                ? "CREATE INDEX IF NOT EXISTS \(table.indexName(property.name)) ON \(table.quotedTable) (\(column.quotedName))"
                                : "DROP INDEX IF EXISTS \(table.indexName(property.name))",
                            values: []))
                }
            }
        }

        private static func writeMetadata(_ connection: SQLiteConnection, schema: Schema, version: UInt64) throws(LocalStoreError) {
            let sql = "INSERT INTO \"\(metadataTable)\" (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            try connection.run(sql, [.text("schema"), .blob(schema.bsonDocument.bsonBytes())])
            try connection.run(sql, [.text("schemaVersion"), .integer(Int64(bitPattern: version))])
            try connection.run(sql, [.text("format"), .integer(1)])
        }
    }
}
