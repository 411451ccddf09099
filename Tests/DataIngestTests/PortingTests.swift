import Foundation
import Testing
import IngestTestSupport
@testable import DataIngest

/// Issue 18 ("Docs/Porting.md"): `Object(value:)` and `Realm.invalidate()`,
/// which RealmSwift code uses and which had no reason to be missing.
@Suite struct PortingTests {
    let directory: TemporaryDirectory
    let realm: Realm

    init() throws {
        directory = try TemporaryDirectory("local")
        realm = try Realm(
            configuration: Realm.Configuration(
                fileURL: directory.file("porting.realm"), objectTypes: [LRTask.self, LRPerson.self, LRNote.self]))
    }

    @Test func objectValueTakesDictionariesArraysAndInstances() throws {
        let id = ObjectId.generate()
        let task = try LRTask(value: [
            "_id": id, "title": "From a dictionary", "tags": ["a", "b"],
            "place": ["name": "Market", "latitude": 52.5],
        ])
        #expect(task._id == id)
        #expect(task.title == "From a dictionary")
        #expect(task.priority == 1)  // left out: the declared default
        #expect(Array(task.tags) == ["a", "b"])
        #expect(task.place?.name == "Market")
        let person = try LRPerson(value: ["Grace", 45])
        #expect(person.name == "Grace" && person.age == 45)
        let copy = try LRPerson(value: person)
        #expect(copy !== person && copy.name == "Grace" && copy.age == 45)
        // Unmanaged until added, as in RealmSwift.
        try realm.write { realm.add(task) }
        #expect(try realm.object(ofType: LRTask.self, forPrimaryKey: id)?.place?.latitude == 52.5)
        let embedded = try LRPlace(value: ["name": "Pier", "latitude": 1.5])
        #expect(embedded.name == "Pier" && embedded.latitude == 1.5)
    }

    @Test func objectValueThrowsForValuesThatDoNotFit() {
        #expect(throws: RealmError.self) { try LRPerson(value: ["name": "Ada", "age": "forty"]) }
        #expect(throws: RealmError.self) { try LRPerson(value: ["name": "Ada", "height": 1.7]) }
        // As create(_:value:): a required property without a declared default must be given.
        #expect(throws: RealmError.self) { try LRPlace(value: ["name": "Pier"]) }
        #expect(throws: RealmError.self) { try LRTask(value: ["_id": ObjectId.generate(), "title": "t", "owner": ["Ada", 36]]) }
    }

    @Test func invalidateStopsManagingObjectsAndCancelsAnOpenWrite() throws {
        try realm.write { realm.create(LRPerson.self, value: ["Ada", 36]) }
        let ada = try #require(try realm.object(ofType: LRPerson.self, forPrimaryKey: "Ada"))
        realm.invalidate()
        try realm.write { ada.age = 37 }
        #expect(ada.age == 37)  // its value, unmanaged
        #expect(try realm.object(ofType: LRPerson.self, forPrimaryKey: "Ada")?.age == 36)

        try realm.beginWrite()
        realm.create(LRPerson.self, value: ["Grace", 45])
        realm.invalidate()
        #expect(!realm.isInWriteTransaction)
        #expect(try realm.object(ofType: LRPerson.self, forPrimaryKey: "Grace") == nil)
    }
}
