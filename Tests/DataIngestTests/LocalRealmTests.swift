import Dispatch
import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

final class LRPlace: EmbeddedObject {
    @Persisted var name: String
    @Persisted var latitude: Double
}

final class LRPerson: Object {
    @Persisted(primaryKey: true) var name: String
    @Persisted var age: Int
}

final class LRTask: Object {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted(indexed: true) var title: String
    @Persisted var priority: Int = 1
    @Persisted var done: Bool = false
    @Persisted var ratio: Float = 0
    @Persisted var due: Date?
    @Persisted var price: Decimal128?
    @Persisted var token: UUID?
    @Persisted var tags: List<String>
    @Persisted var counts: Map<String, Int>
    @Persisted var place: LRPlace?
    @Persisted var owner: LRPerson?
    @Persisted var extra: AnyRealmValue
}

final class LRNote: Object {
    @Persisted var text: String
}

/// Runs `body` in a write transaction of a local realm: `realm.write {}`,
/// which begins, commits or cancels the realm's SQLite transaction (the
/// hook in Docs/LocalRealms.md).
@discardableResult
func localWrite<Result>(_ realm: Realm, _ body: () throws -> Result) throws -> Result {
    try realm.write(body)
}

@Suite struct LocalRealmTests {
    let directory: TemporaryDirectory
    let realm: Realm

    init() throws {
        directory = try TemporaryDirectory("local")
        realm = try Realm(
            configuration: Realm.Configuration(
                fileURL: directory.file("tasks.realm"), objectTypes: [LRTask.self, LRPerson.self, LRNote.self]))
    }

    @Test func addReadBackEveryPropertyType() throws {
        let task = LRTask()
        task.title = "Buy milk"
        task.priority = 3
        task.ratio = 0.25
        task.due = Date(timeIntervalSince1970: 1_700_000_000.5)
        task.price = try Decimal128(parsing: "19.99")
        task.token = UUID()
        task.tags.append(objectsIn: ["home", "shop"])
        task.counts["eggs"] = 6
        let place = LRPlace()
        place.name = "Market"
        place.latitude = 52.5
        task.place = place
        task.extra = .dictionary(["n": .int(1)])
        let person = LRPerson()
        person.name = "Ada"
        person.age = 36
        task.owner = person
        try localWrite(realm) {
            realm.add(person)
            realm.add(task)
        }

        let read = try #require(try realm.object(ofType: LRTask.self, forPrimaryKey: task._id))
        #expect(read !== task)
        #expect(read._id == task._id)
        #expect(read.title == "Buy milk")
        #expect(read.priority == 3)
        #expect(read.done == false)
        #expect(read.ratio == 0.25)
        #expect(read.due == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(read.price == task.price)
        #expect(read.token == task.token)
        #expect(Array(read.tags) == ["home", "shop"])
        #expect(read.counts["eggs"] == 6)
        #expect(read.place?.name == "Market")
        #expect(read.place?.latitude == 52.5)
        #expect(read.extra == .dictionary(["n": .int(1)]))
        #expect(read.owner?.name == "Ada")
        #expect(read.owner?.age == 36)

        // The row holds the documented column forms.
        let raw = try RawSQLite(directory.file("tasks.realm"))
        let row = try raw.rows("SELECT title, priority, due, price, owner FROM LRTask")
        #expect(row == [[.text("Buy milk"), .integer(3), .integer(1_700_000_000_500), .text("19.99"), .text("Ada")]])
    }

    @Test func createTakesDictionariesArraysAndInstances() throws {
        let id = ObjectId.generate()
        let (fromDictionary, fromArray) = try localWrite(realm) {
            (
                realm.create(LRTask.self, value: ["_id": id, "title": "Dictionary", "tags": ["a"]]),
                realm.create(LRPerson.self, value: ["Grace", 45])
            )
        }
        #expect(fromDictionary.title == "Dictionary")
        #expect(fromDictionary.priority == 1)  // the declared default
        #expect(fromArray.name == "Grace")
        #expect(try realm.objects(LRTask.self).count == 1)
        #expect(try realm.object(ofType: LRPerson.self, forPrimaryKey: "Grace")?.age == 45)

        // update: .modified sets only the given properties.
        try localWrite(realm) {
            realm.create(LRTask.self, value: ["_id": id, "done": true], update: .modified)
        }
        let updated = try #require(try realm.object(ofType: LRTask.self, forPrimaryKey: id))
        #expect(updated.done)
        #expect(updated.title == "Dictionary")
        #expect(Array(updated.tags) == ["a"])

        // Without update, a second object with the key fails the whole transaction.
        let error = expectRealmError(.duplicatePrimaryKey) {
            try localWrite(realm) {
                realm.create(LRPerson.self, value: ["name": "Linus", "age": 1])
                realm.create(LRTask.self, value: ["_id": id, "title": "Again"])
            }
        }
        #expect(
            error?.message
                == "LRTask already has an object with _id ObjectId(\(id.hex)); update it instead (an upsert, or create with update: .modified / .all)"
        )
        #expect(try realm.object(ofType: LRPerson.self, forPrimaryKey: "Linus") == nil)
        #expect(try realm.objects(LRTask.self).fetch().map(\.title) == ["Dictionary"])

        let wrong = expectRealmError(.wrongValueType) {
            _ = try localWrite(realm) { realm.create(LRPerson.self, value: ["name": "X", "age": "old"]) }
        }
        #expect(wrong?.message.hasPrefix("LRPerson.age: expected Int") == true)
    }

    @Test func addWithUpdateReplacesTheStoredObject() throws {
        let first = LRPerson()
        first.name = "Ada"
        first.age = 36
        try localWrite(realm) { realm.add(first) }
        let replacement = LRPerson()
        replacement.name = "Ada"
        replacement.age = 37
        let duplicate = expectRealmError(.duplicatePrimaryKey) {
            try localWrite(realm) { realm.add(replacement) }
        }
        #expect(
            duplicate?.message
                == "LRPerson already has an object with name \"Ada\"; update it instead (an upsert, or create with update: .modified / .all)"
        )
        try localWrite(realm) { realm.add(replacement, update: .modified) }
        #expect(try realm.objects(LRPerson.self).fetch().map(\.age) == [37])
    }

    @Test func objectsReadInARolledBackWriteAreNotManaged() throws {
        struct Stop: Error {}
        var read: LRNote?
        #expect(throws: Stop.self) {
            try localWrite(realm) {
                realm.create(LRNote.self, value: ["text": "never stored"])
                read = try realm.objects(LRNote.self).first
                throw Stop()
            }
        }
        #expect(read?.text == "never stored")
        let local = try #require(realm.localStore)
        #expect(local.rowID(of: try #require(read)) == nil)
        #expect(try realm.objects(LRNote.self).isEmpty)
    }

    @Test func settingManagedPropertiesInsideWritePersists() throws {
        let task = LRTask()
        task.title = "Draft"
        try localWrite(realm) { realm.add(task) }
        try localWrite(realm) {
            task.title = "Final"
            task.tags.append("edited")
        }
        let other = try #require(try realm.object(ofType: LRTask.self, forPrimaryKey: task._id))
        #expect(other.title == "Final")
        #expect(Array(other.tags) == ["edited"])
        // Objects read from the realm are managed too.
        try localWrite(realm) { other.priority = 9 }
        #expect(try realm.objects(LRTask.self).filter("priority == 9").count == 1)
        let raw = try RawSQLite(directory.file("tasks.realm"))
        #expect(try raw.rows("SELECT title, priority FROM LRTask") == [[.text("Final"), .integer(9)]])
    }

    @Test func changesOutsideWriteAreAnErrorAndUndone() throws {
        let task = LRTask()
        task.title = "Stored"
        try localWrite(realm) { realm.add(task) }
        task.title = "Changed outside"
        let error = expectRealmError(.modifiedOutsideWriteTransaction) {
            try localWrite(realm) { task.priority = 2 }
        }
        #expect(
            error?.message
                == "LRTask.title of a managed object was changed outside a write transaction, so the change was undone; change managed objects inside realm.write { }"
        )
        #expect(task.title == "Stored")
        // The next write works and the stored value never changed.
        try localWrite(realm) { task.priority = 5 }
        let stored = try #require(try realm.object(ofType: LRTask.self, forPrimaryKey: task._id))
        #expect(stored.title == "Stored")
        #expect(stored.priority == 5)

        let outside = expectRealmError(.notInWriteTransaction) {
            realm.add(LRNote())
            try realm.write {}
        }
        #expect(
            outside?.message == "add(_:) was called outside a write transaction, so nothing was written; call it inside realm.write { }")
    }

    @Test func aThrowingWriteRollsBackAndRestoresObjects() throws {
        struct Stop: Error {}
        let task = LRTask()
        task.title = "Kept"
        try localWrite(realm) { realm.add(task) }
        #expect(throws: Stop.self) {
            try localWrite(realm) {
                task.title = "Lost"
                realm.add(LRNote())
                throw Stop()
            }
        }
        #expect(task.title == "Kept")
        #expect(try realm.objects(LRNote.self).count == 0)
        #expect(try realm.objects(LRTask.self).first?.title == "Kept")
    }

    @Test func queriesFilterSortAndCount() throws {
        try localWrite(realm) {
            for (index, title) in ["Wash car", "Call Bob", "Buy bread", "Book flight", "Water plants"].enumerated() {
                realm.create(LRTask.self, value: ["title": title, "priority": index % 3, "done": index.isMultiple(of: 2)])
            }
        }
        let open = try realm.objects(LRTask.self).filter("done == false")
        #expect(try open.count == 2)
        #expect(try open.sorted(byKeyPath: "title").fetch().map(\.title) == ["Book flight", "Call Bob"])
        let sorted = realm.objects(LRTask.self).sorted(byKeyPath: "priority", ascending: false).sorted(byKeyPath: "title")
        #expect(try sorted.fetch().map(\.title) == ["Buy bread", "Call Bob", "Water plants", "Book flight", "Wash car"])
        #expect(try sorted.first?.title == "Buy bread")
        #expect(try sorted.prefix(2).count == 2)
        #expect(try realm.objects(LRTask.self).filter("title BEGINSWITH %@ AND priority >= %@", "B", 1).count == 1)
        #expect(try realm.objects(LRTask.self).filter("title CONTAINS[c] 'wa'").count == 2)
        #expect(try realm.objects(LRTask.self).filter("priority IN %@", [0, 2]).isEmpty == false)
        #expect(try realm.objects(LRNote.self).isEmpty)

        let bad = expectRealmError(.invalidQuery) { _ = try realm.objects(LRTask.self).filter("colour == 'red'").count }
        #expect(bad?.message.hasPrefix("LRTask has no property 'colour' to use in a predicate") == true)
        expectRealmError(.invalidQuery) { _ = try realm.objects(LRTask.self).filter("title ==") }
        expectRealmError(.invalidQuery) { _ = try realm.objects(LRTask.self).sorted(byKeyPath: "tags").fetch() }
    }

    @Test func linksAreQueriedByTheTargetObject() throws {
        let ada = LRPerson()
        ada.name = "Ada"
        try localWrite(realm) {
            realm.add(ada)
            let task = LRTask()
            task.title = "Analytical engine"
            task.owner = ada
            realm.add(task)
            realm.create(LRTask.self, value: ["title": "Unowned"])
        }
        #expect(try realm.objects(LRTask.self).filter("owner == %@", ada).fetch().map(\.title) == ["Analytical engine"])
        #expect(try realm.objects(LRTask.self).filter("owner == nil").fetch().map(\.title) == ["Unowned"])
        // A link whose target is deleted reads as nil.
        try localWrite(realm) { realm.delete(ada) }
        #expect(try realm.objects(LRTask.self).filter("title == 'Analytical engine'").first?.owner == nil)
    }

    @Test func deleteObjectsAndResults() throws {
        let notes = (0..<4).map { index -> LRNote in
            let note = LRNote()
            note.text = "note \(index)"
            return note
        }
        try localWrite(realm) { realm.add(notes) }
        try localWrite(realm) { realm.delete(notes[0]) }
        #expect(try realm.objects(LRNote.self).count == 3)
        try localWrite(realm) { realm.delete(try realm.objects(LRNote.self).filter("text ENDSWITH '3'")) }
        #expect(try realm.objects(LRNote.self).fetch().map(\.text) == ["note 1", "note 2"])
        let unmanaged = expectRealmError(.objectNotManaged) {
            try localWrite(realm) { realm.delete(LRNote()) }
        }
        #expect(
            unmanaged?.message
                == "delete(_:) was given a LRNote that this realm does not manage; delete objects read from or added to this realm")
        try localWrite(realm) { realm.delete(try realm.objects(LRNote.self).fetch()) }
        #expect(try realm.objects(LRNote.self).isEmpty)
    }

    @Test func readsInsideAWriteSeeItsChanges() throws {
        let count = try localWrite(realm) { () throws -> Int in
            realm.create(LRNote.self, value: ["text": "pending"])
            return try realm.objects(LRNote.self).count
        }
        #expect(count == 1)
    }

    @Test func dynamicReadsByClassName() throws {
        try localWrite(realm) { realm.create(LRPerson.self, value: ["name": "Ada", "age": 36]) }
        #expect(try realm.dynamicObjects("LRPerson", where: "age > %@", 30).map { $0["name"] } == [.string("Ada")])
        expectRealmError(.typeNotInRealm) { _ = try realm.dynamicObjects("Nope") }
    }
}

@Suite struct LocalRealmConcurrencyTests {
    @Test func realmsOnOtherThreadsReadWhileAWriteIsOpen() throws {
        let directory = try TemporaryDirectory("local")
        let configuration = Realm.Configuration(fileURL: directory.file("threads.realm"), objectTypes: [LRNote.self])
        let realm = try Realm(configuration: configuration)
        try localWrite(realm) { realm.create(LRNote.self, value: ["text": "committed"]) }
        let counts = LockedBox<[Int]>([])
        try localWrite(realm) {
            realm.create(LRNote.self, value: ["text": "pending"])
            // Each thread opens its own realm on the file; none waits for this write.
            DispatchQueue.concurrentPerform(iterations: 3) { _ in
                let count = (try? Realm(configuration: configuration).objects(LRNote.self).count) ?? -1
                counts.withLock { $0.append(count) }
            }
        }
        #expect(counts.withLock { $0 } == [1, 1, 1])
        #expect(try realm.objects(LRNote.self).count == 2)
        let other = try Realm(configuration: configuration)
        #expect(try other.objects(LRNote.self).fetch().map(\.text) == ["committed", "pending"])
    }
}

@Suite struct LocalRealmMigrationTests {
    final class LRVersioned: Object {
        @Persisted(primaryKey: true) var key: String
        @Persisted var volume: Int
        @Persisted var theme: String = "light"
        @Persisted var nickname: String?
    }

    @Test func realmMigratesAdditivelyWithDeclaredDefaults() throws {
        let directory = try TemporaryDirectory("local")
        let url = directory.file("versioned.realm")
        // Version 1 of the app had only key and volume.
        let v1 = ObjectSchema(
            className: "LRVersioned", kind: .topLevel,
            properties: [
                Property(name: "key", type: .string, isPrimaryKey: true), Property(name: "volume", type: .int),
            ])
        let old = try LocalStore(fileURL: url, schema: try Schema([v1]), schemaVersion: 1)
        try old.write { try $0.insert(["key": .string("main"), "volume": .int64(7)], into: "LRVersioned") }
        old.close()

        let stale = expectRealmError(.schemaVersionMismatch) {
            let realm = try Realm(configuration: Realm.Configuration(fileURL: url, schemaVersion: 1, objectTypes: [LRVersioned.self]))
            _ = try realm.objects(LRVersioned.self).count
        }
        #expect(
            stale?.message
                == "the schema changed (LRVersioned.theme was added; LRVersioned.nickname was added) but schemaVersion is still 1; increase schemaVersion to 2 to migrate versioned.realm"
        )

        let realm = try Realm(configuration: Realm.Configuration(fileURL: url, schemaVersion: 2, objectTypes: [LRVersioned.self]))
        let settings = try #require(try realm.object(ofType: LRVersioned.self, forPrimaryKey: "main"))
        #expect(settings.volume == 7)
        #expect(settings.theme == "light")
        #expect(settings.nickname == nil)
    }

    @Test func destructiveChangeNamesTypeAndProperty() throws {
        let directory = try TemporaryDirectory("local")
        let url = directory.file("destructive.realm")
        let previous = ObjectSchema(
            className: "LRVersioned", kind: .topLevel,
            properties: [
                Property(name: "key", type: .string, isPrimaryKey: true), Property(name: "volume", type: .int),
                Property(name: "theme", type: .string), Property(name: "nickname", type: .string, isOptional: true),
                Property(name: "legacy", type: .bool),
            ])
        try LocalStore(fileURL: url, schema: try Schema([previous]), schemaVersion: 1).close()
        let error = expectRealmError(.destructiveMigration) {
            let realm = try Realm(configuration: Realm.Configuration(fileURL: url, schemaVersion: 2, objectTypes: [LRVersioned.self]))
            _ = try realm.objects(LRVersioned.self).count
        }
        #expect(error?.className == "LRVersioned")
        #expect(error?.propertyName == "legacy")
        #expect(
            error?.message
                == "LRVersioned.legacy: the bool property 'legacy' was removed. A local realm migrates only additively (new classes, new optional properties, properties with a default value, indexes), so its data would be lost; restore the previous declaration, or delete \(url.standardizedFileURL.path) to start over with an empty realm"
        )
    }
}
