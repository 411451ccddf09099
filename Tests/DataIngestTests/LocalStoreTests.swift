import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

@Suite struct LocalStoreTests {
    let directory: TemporaryDirectory
    let url: URL

    init() throws {
        directory = try TemporaryDirectory("local")
        url = directory.file("local.realm")
    }

    private func open(version: UInt64 = 0) throws -> LocalStore {
        try LocalStore(fileURL: url, schema: try LocalTestSchema.schema(), schemaVersion: version)
    }

    @Test func createsTypedTablesInWALMode() throws {
        let store = try open()
        store.close()
        let raw = try RawSQLite(url)
        #expect(try raw.rows("PRAGMA journal_mode") == [[.text("wal")]])
        let task = try raw.columns("Task")
        #expect(task.primaryKey == ["_id"])
        #expect(
            task.types == [
                "_id": "BLOB", "title": "TEXT", "priority": "INTEGER", "done": "INTEGER", "score": "REAL", "ratio": "REAL",
                "due": "INTEGER", "note": "TEXT", "price": "TEXT", "token": "BLOB", "payload": "BLOB", "tags": "BLOB",
                "labels": "BLOB", "location": "BLOB", "extra": "BLOB",
            ])
        #expect(try raw.columns("Counter").primaryKey.isEmpty)
        // Embedded classes have no table; the indexed property has an index.
        let tables = try raw.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        #expect(tables == [[.text("Counter")], [.text("Task")], [.text("__dataingest_metadata")]])
        #expect(
            try raw.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Task' AND sql IS NOT NULL")
                == [[.text("idx_Task_title")]])
        let version = try raw.rows("SELECT value FROM __dataingest_metadata WHERE key = 'schemaVersion'")
        #expect(version == [[.integer(0)]])
        guard case .blob(let bytes)? = try raw.rows("SELECT value FROM __dataingest_metadata WHERE key = 'schema'").first?.first else {
            Issue.record("no stored schema")
            return
        }
        #expect(try Schema(bsonDocument: BSONDocument(bson: bytes)) == LocalTestSchema.schema())
    }

    @Test func storesEveryTypeInItsColumnAndReadsItBack() throws {
        let store = try open()
        let id = ObjectId.generate()
        let token = UUID()
        let tokenBytes = withUnsafeBytes(of: token.uuid) { Array($0) }
        let price = try Decimal128(parsing: "12.50")
        let document = LocalTestSchema.task(
            id, title: "Buy milk", priority: 3, done: true,
            changes: [
                "score": .double(9.25), "due": .datetime(1_700_000_000_123), "note": .null, "price": .decimal128(price),
                "token": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: tokenBytes)),
                "payload": .binary(BSONBinary(bytes: [0, 1, 2, 255])),
                "tags": .array([.string("home"), .string("shop")]), "labels": .document(["a": .int64(1)]),
                "location": .document(["latitude": .double(52.5), "longitude": .double(13.4)]),
                "extra": .string("anything"),
            ])
        let rowID = try store.write { try $0.insert(document, into: "Task") }
        #expect(rowID > 0)

        let row = try #require(try store.object("Task", primaryKey: .objectId(id)))
        #expect(row.rowID == rowID)
        #expect(row.document["_id"] == .objectId(id))
        #expect(row.document["title"] == .string("Buy milk"))
        #expect(row.document["priority"] == .int64(3))
        #expect(row.document["done"] == .bool(true))
        #expect(row.document["score"] == .double(9.25))
        #expect(row.document["ratio"] == .double(0.5))
        #expect(row.document["due"] == .datetime(1_700_000_000_123))
        #expect(row.document["note"] == .null)
        #expect(row.document["price"] == .decimal128(price))
        #expect(row.document["token"] == .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: tokenBytes)))
        #expect(row.document["payload"] == .binary(BSONBinary(bytes: [0, 1, 2, 255])))
        #expect(row.document["tags"] == .array([.string("home"), .string("shop")]))
        #expect(row.document["labels"] == .document(["a": .int64(1)]))
        #expect(row.document["location"] == .document(["latitude": .double(52.5), "longitude": .double(13.4)]))
        #expect(row.document["extra"] == .string("anything"))
        #expect(row.document.keys == LocalTestSchema.taskProperties.map(\.name))
        store.close()

        // The columns hold the documented forms.
        let raw = try RawSQLite(url)
        let stored = try raw.rows("SELECT _id, done, due, price, token, typeof(score), tags FROM Task")
        #expect(stored.count == 1)
        #expect(stored[0][0] == .blob(id.bytes))
        #expect(stored[0][1] == .integer(1))
        #expect(stored[0][2] == .integer(1_700_000_000_123))
        #expect(stored[0][3] == .text("12.50"))
        #expect(stored[0][4] == .blob(tokenBytes))
        #expect(stored[0][5] == .text("real"))
        #expect(
            stored[0][6] == .blob(BSONDocument(fields: [.init(key: "v", value: .array([.string("home"), .string("shop")]))]).bsonBytes()))
    }

    @Test func absentOptionalsAndCollectionsReadAsNullAndEmpty() throws {
        let store = try open()
        let id = ObjectId.generate()
        try store.write { try $0.insert(LocalTestSchema.task(id, title: "Minimal"), into: "Task") }
        let row = try #require(try store.object("Task", primaryKey: .objectId(id)))
        #expect(row.document["score"] == .null)
        #expect(row.document["location"] == .null)
        #expect(row.document["extra"] == .null)
        #expect(row.document["tags"] == .array([]))
        #expect(row.document["labels"] == .document([:]))
    }

    @Test func duplicatePrimaryKeyIsAnErrorAndUpsertReplaces() throws {
        let store = try open()
        let id = ObjectId.generate()
        try store.write { try $0.insert(LocalTestSchema.task(id, title: "First"), into: "Task") }
        let error = expectLocalStoreError(.duplicatePrimaryKey) {
            _ = try store.write { try $0.insert(LocalTestSchema.task(id, title: "Second"), into: "Task") }
        }
        #expect(error?.className == "Task")
        #expect(error?.propertyName == "_id")
        #expect(
            error?.message
                == "Task already has an object with _id ObjectId(\(id.hex)); update it instead (an upsert, or create with update: .modified / .all)"
        )
        #expect(try store.object("Task", primaryKey: .objectId(id))?.document["title"] == .string("First"))

        let firstRow = try #require(try store.object("Task", primaryKey: .objectId(id))).rowID
        let upserted = try store.write { try $0.upsert(LocalTestSchema.task(id, title: "Replaced", priority: 9), into: "Task") }
        #expect(upserted == firstRow)
        let row = try #require(try store.object("Task", primaryKey: .objectId(id)))
        #expect(row.document["title"] == .string("Replaced"))
        #expect(row.document["priority"] == .int64(9))
        let newID = ObjectId.generate()
        try store.write { try $0.upsert(LocalTestSchema.task(newID, title: "Inserted"), into: "Task") }
        #expect(try store.count(LocalQuery("Task")) == 2)
    }

    @Test func partialUpdateKeepsOtherProperties() throws {
        let store = try open()
        let id = ObjectId.generate()
        try store.write { try $0.insert(LocalTestSchema.task(id, title: "Task", priority: 2), into: "Task") }
        let found = try store.write { try $0.update("Task", primaryKey: .objectId(id), set: ["done": .bool(true), "note": .string("ok")]) }
        #expect(found)
        let row = try #require(try store.object("Task", primaryKey: .objectId(id)))
        #expect(row.document["done"] == .bool(true))
        #expect(row.document["note"] == .string("ok"))
        #expect(row.document["title"] == .string("Task"))
        #expect(row.document["priority"] == .int64(2))
        #expect(try store.write { try $0.update("Task", primaryKey: .objectId(ObjectId.generate()), set: ["done": .bool(false)]) } == false)

        let wrongType = expectLocalStoreError(.invalidDocument) {
            _ = try store.write { try $0.update("Task", primaryKey: .objectId(id), set: ["priority": .string("high")]) }
        }
        #expect(
            wrongType?.message
                == "Task.priority: expected an int64 (or int32) for int, found string; pass values that match the class's schema")
        let key = expectLocalStoreError(.invalidDocument) {
            _ = try store.write { try $0.update("Task", primaryKey: .objectId(id), set: ["_id": .objectId(ObjectId.generate())]) }
        }
        #expect(key?.message == "Task._id is the primary key and cannot be changed; delete the object and add a new one")
    }

    @Test func invalidDocumentsAreRejectedWithThePropertyNamed() throws {
        let store = try open()
        let missing = expectLocalStoreError(.invalidDocument) {
            _ = try store.write { try $0.insert(["_id": .objectId(ObjectId.generate()), "title": .string("x")], into: "Task") }
        }
        #expect(missing?.propertyName == "priority")
        #expect(missing?.message.hasPrefix("Task.priority: the required int property 'priority' of Task is missing") == true)
        let unknown = expectLocalStoreError(.invalidDocument) {
            _ = try store.write { try $0.insert(LocalTestSchema.task(title: "x", changes: ["colour": .string("red")]), into: "Task") }
        }
        #expect(unknown?.message == "Task.colour: Task has no property 'colour'; pass values that match the class's schema")
        let embedded = expectLocalStoreError(.unknownClass) {
            _ = try store.write { try $0.insert(["latitude": .double(1), "longitude": .double(2)], into: "Location") }
        }
        #expect(
            embedded?.message
                == "the local realm has no table for 'Location': it is an embedded class; its objects live inside the objects that embed them"
        )
        #expect(try store.count(LocalQuery("Task")) == 0)
    }

    @Test func aThrowingWriteRollsBackEverything() throws {
        struct Stop: Error {}
        let store = try open()
        #expect(throws: Stop.self) {
            try store.write { transaction in
                try transaction.insert(LocalTestSchema.task(title: "a"), into: "Task")
                try transaction.insert(LocalTestSchema.task(title: "b"), into: "Task")
                #expect(try transaction.count(LocalQuery("Task")) == 2)  // the transaction sees its own writes
                throw Stop()
            }
        }
        #expect(try store.count(LocalQuery("Task")) == 0)
        // The writer is free again.
        try store.write { try $0.insert(LocalTestSchema.task(title: "c"), into: "Task") }
        #expect(try store.count(LocalQuery("Task")) == 1)
    }

    @Test func classesWithoutPrimaryKeyUseRowIDs() throws {
        let store = try open()
        let (first, second) = try store.write { transaction in
            (
                try transaction.insert(["name": .string("a"), "value": .int64(1)], into: "Counter"),
                try transaction.insert(["name": .string("a"), "value": .int64(2)], into: "Counter")
            )
        }
        #expect(first != second)
        #expect(try store.write { try $0.update("Counter", rowID: second, set: ["value": .int64(20)]) })
        #expect(try store.read { try $0.object("Counter", rowID: second) }?.document["value"] == .int64(20))
        let noKey = expectLocalStoreError(.missingPrimaryKey) {
            _ = try store.object("Counter", primaryKey: .string("a"))
        }
        #expect(
            noKey?.message
                == "Counter has no primary key, so lookup by primary key is not possible; declare one (@Persisted(primaryKey: true)) or address objects by rowID"
        )
        #expect(try store.write { try $0.delete("Counter", rowID: first) })
        #expect(try store.write { try $0.delete("Counter", rowID: first) } == false)
        #expect(try store.count(LocalQuery("Counter")) == 1)
    }

    @Test func deleteByPrimaryKeyAndByQuery() throws {
        let store = try open()
        let ids = (0..<5).map { _ in ObjectId.generate() }
        try store.write { transaction in
            for (index, id) in ids.enumerated() {
                try transaction.insert(LocalTestSchema.task(id, title: "t\(index)", priority: Int64(index)), into: "Task")
            }
        }
        #expect(try store.write { try $0.delete("Task", primaryKey: .objectId(ids[0])) })
        #expect(try store.object("Task", primaryKey: .objectId(ids[0])) == nil)
        let removed = try store.write { try $0.delete(try LocalQuery("Task").filter("priority >= 3")) }
        #expect(removed == 2)
        let oneMore = try store.write { try $0.delete(LocalQuery("Task").sorted(by: "priority", ascending: false).limit(1)) }
        #expect(oneMore == 1)
        #expect(try store.objects(LocalQuery("Task")).map { $0.document["title"] } == [.string("t1")])
    }

    @Test func closedStoreThrows() throws {
        let store = try open()
        store.close()
        store.close()
        let error = expectLocalStoreError(.closed) { _ = try store.count(LocalQuery("Task")) }
        #expect(error?.message == "the local realm store local.realm is closed; open it again")
        expectLocalStoreError(.closed) { try store.write { _ in } }
    }

    @Test func asymmetricClassesCannotBeStored() throws {
        let sensor = ObjectSchema(
            className: "WeatherSensor", kind: .asymmetric,
            properties: [
                Property(name: "_id", type: .objectId, isPrimaryKey: true)
            ])
        let error = expectLocalStoreError(.unknownClass) {
            _ = try LocalStore(fileURL: url, schema: try Schema([sensor]))
        }
        #expect(
            error?.message
                == "WeatherSensor is an asymmetric (upload-only) class and cannot be stored in a local realm; remove it from the local realm's objectTypes and write it in a synced realm"
        )
    }

    @Test func nestedWriteOnOneThreadIsAnError() throws {
        let store = try open()
        let error = expectLocalStoreError(.nestedWrite) {
            try store.write { _ in try store.write { _ in } }
        }
        #expect(
            error?.message
                == "a write transaction is already open on this thread; write transactions cannot be nested: move the inner writes into the outer one"
        )
        try store.write { try $0.insert(LocalTestSchema.task(title: "after"), into: "Task") }
        #expect(try store.count(LocalQuery("Task")) == 1)
    }
}
