import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

@Suite struct LocalStoreMigrationTests {
    let directory: TemporaryDirectory
    let url: URL

    init() throws {
        directory = try TemporaryDirectory("local")
        url = directory.file("migrate.realm")
    }

    private let settingsV1 = ObjectSchema(
        className: "Settings", kind: .topLevel,
        properties: [
            Property(name: "_id", type: .string, isPrimaryKey: true),
            Property(name: "theme", type: .string),
            Property(name: "volume", type: .int),
        ])

    private func settings(adding extra: [Property], removing: Set<String> = []) -> ObjectSchema {
        var schema = settingsV1
        schema.properties = schema.properties.filter { !removing.contains($0.name) } + extra
        return schema
    }

    private func seed() throws {
        let store = try LocalStore(fileURL: url, schema: try Schema([settingsV1]), schemaVersion: 1)
        try store.write { transaction in
            try transaction.insert(["_id": .string("main"), "theme": .string("dark"), "volume": .int64(7)], into: "Settings")
        }
        store.close()
    }

    @Test func additiveChangesMigrateWhenTheVersionIncreases() throws {
        try seed()
        let profile = ObjectSchema(
            className: "Profile", kind: .topLevel,
            properties: [
                Property(name: "_id", type: .objectId, isPrimaryKey: true), Property(name: "name", type: .string),
            ])
        let v2 = settings(adding: [
            Property(name: "nickname", type: .string, isOptional: true),
            Property(name: "fontSize", type: .int, isIndexed: true),
            Property(name: "recent", type: .string, collection: .list),
            Property(name: "accent", type: .string),
        ])
        let store = try LocalStore(
            fileURL: url, schema: try Schema([v2, profile]), schemaVersion: 2,
            defaults: ["Settings": ["fontSize": .int64(12), "accent": .string("blue")]])
        #expect(store.schemaVersion == 2)
        let row = try #require(try store.object("Settings", primaryKey: .string("main")))
        #expect(row.document["theme"] == .string("dark"))
        #expect(row.document["volume"] == .int64(7))
        #expect(row.document["nickname"] == .null)
        #expect(row.document["fontSize"] == .int64(12))
        #expect(row.document["recent"] == .array([]))
        #expect(row.document["accent"] == .string("blue"))
        try store.write { try $0.insert(["_id": .objectId(ObjectId.generate()), "name": .string("Ada")], into: "Profile") }
        #expect(try store.count(try LocalQuery("Settings").filter("fontSize == 12")) == 1)
        store.close()

        let raw = try RawSQLite(url)
        #expect(try raw.columns("Settings").types["fontSize"] == "INTEGER")
        #expect(try raw.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'idx_Settings_fontSize'").count == 1)
        #expect(try raw.rows("SELECT value FROM __dataingest_metadata WHERE key = 'schemaVersion'") == [[.integer(2)]])
        guard case .blob(let bytes)? = try raw.rows("SELECT value FROM __dataingest_metadata WHERE key = 'schema'").first?.first else {
            Issue.record("no stored schema")
            return
        }
        #expect(try Schema(bsonDocument: BSONDocument(bson: bytes)) == Schema([v2, profile]))
    }

    @Test func aNewClassNeedsNoVersionIncrease() throws {
        try seed()
        let note = ObjectSchema(className: "Note", kind: .topLevel, properties: [Property(name: "text", type: .string)])
        let store = try LocalStore(fileURL: url, schema: try Schema([settingsV1, note]), schemaVersion: 1)
        #expect(store.schemaVersion == 1)
        try store.write { try $0.insert(["text": .string("hello")], into: "Note") }
        #expect(try store.count(LocalQuery("Settings")) == 1)
        store.close()
        let raw = try RawSQLite(url)
        #expect(try raw.columns("Note").types == ["text": "TEXT"])
        #expect(try raw.rows("SELECT value FROM __dataingest_metadata WHERE key = 'schemaVersion'") == [[.integer(1)]])
    }

    @Test func reopeningWithTheSameSchemaKeepsData() throws {
        try seed()
        let store = try LocalStore(fileURL: url, schema: try Schema([settingsV1]), schemaVersion: 1)
        #expect(try store.count(LocalQuery("Settings")) == 1)
        store.close()
        // A higher version with no change only records the version.
        let newer = try LocalStore(fileURL: url, schema: try Schema([settingsV1]), schemaVersion: 3)
        #expect(newer.schemaVersion == 3)
        #expect(try newer.count(LocalQuery("Settings")) == 1)
    }

    @Test func aChangeWithoutAVersionIncreaseIsAnError() throws {
        try seed()
        let v2 = settings(adding: [Property(name: "nickname", type: .string, isOptional: true)])
        let error = expectLocalStoreError(.schemaVersionMismatch) {
            _ = try LocalStore(fileURL: url, schema: try Schema([v2]), schemaVersion: 1)
        }
        #expect(
            error?.message
                == "the schema changed (Settings.nickname was added) but schemaVersion is still 1; increase schemaVersion to 2 to migrate migrate.realm"
        )
        // Nothing was changed by the failed open.
        #expect(try RawSQLite(url).columns("Settings").types["nickname"] == nil)
    }

    @Test func anOlderVersionIsAnError() throws {
        try seed()
        let error = expectLocalStoreError(.schemaVersionMismatch) {
            _ = try LocalStore(fileURL: url, schema: try Schema([settingsV1]), schemaVersion: 0)
        }
        #expect(
            error?.message
                == "migrate.realm has schema version 1, newer than this configuration's schemaVersion 0; open it with schemaVersion 1 or higher (a newer version of the app wrote it)"
        )
    }

    @Test func removedPropertyIsADestructiveChange() throws {
        try seed()
        let error = expectLocalStoreError(.destructiveMigration) {
            _ = try LocalStore(fileURL: url, schema: try Schema([settings(adding: [], removing: ["volume"])]), schemaVersion: 2)
        }
        #expect(error?.className == "Settings")
        #expect(error?.propertyName == "volume")
        #expect(
            error?.message
                == "Settings.volume: the int property 'volume' was removed. A local realm migrates only additively (new classes, new optional properties, properties with a default value, indexes), so its data would be lost; restore the previous declaration, or delete \(url.path) to start over with an empty realm"
        )
        // The data is still there for the previous schema.
        let store = try LocalStore(fileURL: url, schema: try Schema([settingsV1]), schemaVersion: 1)
        #expect(try store.object("Settings", primaryKey: .string("main"))?.document["volume"] == .int64(7))
    }

    @Test func changedTypeIsADestructiveChange() throws {
        try seed()
        var changed = settingsV1
        changed.properties[2] = Property(name: "volume", type: .double)
        let error = expectLocalStoreError(.destructiveMigration) {
            _ = try LocalStore(fileURL: url, schema: try Schema([changed]), schemaVersion: 2)
        }
        #expect(error?.propertyName == "volume")
        #expect(
            error?.message.hasPrefix(
                "Settings.volume: the property changed type from int to double. A local realm migrates only additively") == true)

        var optional = settingsV1
        optional.properties[1].isOptional = true
        let optionality = expectLocalStoreError(.destructiveMigration) {
            _ = try LocalStore(fileURL: url, schema: try Schema([optional]), schemaVersion: 2)
        }
        #expect(optionality?.message.hasPrefix("Settings.theme: the property changed type from string to string?.") == true)
    }

    @Test func changedPrimaryKeyIsADestructiveChange() throws {
        try seed()
        var changed = settingsV1
        changed.properties[0].isPrimaryKey = false
        changed.properties[1].isPrimaryKey = true
        let error = expectLocalStoreError(.destructiveMigration) {
            _ = try LocalStore(fileURL: url, schema: try Schema([changed]), schemaVersion: 2)
        }
        #expect(error?.message.hasPrefix("Settings.theme: the primary key changed from '_id' to 'theme'.") == true)
    }

    @Test func aNewRequiredPropertyNeedsADefault() throws {
        try seed()
        let error = expectLocalStoreError(.destructiveMigration) {
            _ = try LocalStore(
                fileURL: url, schema: try Schema([settings(adding: [Property(name: "accent", type: .string)])]), schemaVersion: 2)
        }
        #expect(
            error?.message
                == "Settings.accent: the new required string property has no value for the existing objects; declare a default value (@Persisted var accent = …) or make it optional"
        )
    }

    @Test func classesLeftOutOfTheSchemaKeepTheirData() throws {
        try seed()
        let other = ObjectSchema(className: "Note", kind: .topLevel, properties: [Property(name: "text", type: .string)])
        let store = try LocalStore(fileURL: url, schema: try Schema([other]), schemaVersion: 2)
        expectLocalStoreError(.unknownClass) { _ = try store.count(LocalQuery("Settings")) }
        store.close()
        let again = try LocalStore(fileURL: url, schema: try Schema([settingsV1, other]), schemaVersion: 2)
        #expect(try again.count(LocalQuery("Settings")) == 1)
    }
}
