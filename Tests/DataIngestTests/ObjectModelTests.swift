import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

final class ModelLocation: EmbeddedObject {
    @Persisted var latitude: Double
    @Persisted var longitude: Double
}

final class ModelStation: Object {
    @Persisted(primaryKey: true) var _id: String
    @Persisted var name: String
}

/// Every property type of the object model, a mapped primary key and a
/// renamed class.
final class FullReading: AsymmetricObject {
    @Persisted(primaryKey: true) var id: ObjectId
    @Persisted(indexed: true) var deviceId: String
    @Persisted var flag: Bool
    @Persisted var small: Int8
    @Persisted var count32: Int32
    @Persisted var ratio: Float
    @Persisted var value: Double
    @Persisted var raw: Data
    @Persisted var takenAt: Date
    @Persisted var amount: Decimal128
    @Persisted var serial: UUID
    @Persisted var note: String?
    @Persisted var maybeCount: Int?
    @Persisted var unit: String = "F"
    @Persisted var samples: List<Double>
    @Persisted var tags: List<String?>
    @Persisted var labels: Map<String, String>
    @Persisted var location: ModelLocation?
    @Persisted var path: List<ModelLocation>
    @Persisted var station: ModelStation?
    @Persisted var payload: AnyRealmValue
    var notPersisted = 42

    override class func className() -> String { "full_reading" }
    override class func propertiesMapping() -> [String: String] { ["id": "_id"] }
}

private let fixedId = try! ObjectId(hex: "65a1f0c2e4b0a1b2c3d4e5f6")
private let fixedUUID = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
private let fixedDate = Date(timeIntervalSince1970: 1_700_000_000.1239)

private func fullReadingInstance() -> FullReading {
    let reading = FullReading()
    reading.id = fixedId
    reading.deviceId = "WX1"
    reading.flag = true
    reading.small = -8
    reading.count32 = 32
    reading.ratio = 0.5
    reading.value = 2.25
    reading.raw = Data([1, 2, 3])
    reading.takenAt = fixedDate
    reading.amount = Decimal128(high: 0x3040_0000_0000_0000, low: 7)
    reading.serial = fixedUUID
    reading.note = nil
    reading.maybeCount = 5
    reading.samples.append(objectsIn: [1, 2])
    reading.tags.append(objectsIn: ["a", nil])
    reading.labels["site"] = "roof"
    reading.labels["floor"] = "3"
    let location = ModelLocation()
    location.latitude = 48.1
    location.longitude = 11.6
    reading.location = location
    reading.path.append(location)
    let station = ModelStation()
    station._id = "munich-1"
    reading.station = station
    reading.payload = .dictionary(["n": .int(1), "s": .string("x")])
    return reading
}

private func makeFullReadingDictionary() -> [String: Any] {
    [
        "id": fixedId, "deviceId": "WX1", "flag": true, "small": -8, "count32": 32, "ratio": 0.5,
        "value": 2.25, "raw": Data([1, 2, 3]), "takenAt": fixedDate,
        "amount": Decimal128(high: 0x3040_0000_0000_0000, low: 7), "serial": fixedUUID,
        "note": Optional<String>.none as Any, "maybeCount": 5, "samples": [1.0, 2.0], "tags": ["a", nil] as [String?],
        "labels": ["site": "roof", "floor": "3"], "location": ["latitude": 48.1, "longitude": 11.6],
        "path": [["latitude": 48.1, "longitude": 11.6]], "station": "munich-1",
        "payload": ["n": 1, "s": "x"],
    ]
}

private let expectedFullReading: BSONDocument = [
    "_id": .objectId(fixedId),
    "deviceId": "WX1",
    "flag": .bool(true),
    "small": .int64(-8),
    "count32": .int64(32),
    "ratio": .double(0.5),
    "value": .double(2.25),
    "raw": .binary(BSONBinary(subtype: 0, bytes: [1, 2, 3])),
    "takenAt": .datetime(1_700_000_000_123),
    "amount": .decimal128(Decimal128(high: 0x3040_0000_0000_0000, low: 7)),
    "serial": .binary(BSONBinary(subtype: 4, bytes: withUnsafeBytes(of: fixedUUID.uuid) { Array($0) })),
    "note": .null,
    "maybeCount": .int64(5),
    "unit": "F",
    "samples": .array([.double(1), .double(2)]),
    "tags": .array(["a", .null]),
    "labels": .document(["floor": "3", "site": "roof"]),
    "location": .document(["latitude": .double(48.1), "longitude": .double(11.6)]),
    "path": .array([.document(["latitude": .double(48.1), "longitude": .double(11.6)])]),
    "station": "munich-1",
    "payload": .document(["n": .int64(1), "s": "x"]),
]

@Suite struct ObjectModelTests {
    @Test func theSchemaIsDerivedFromPersistedPropertiesInOrder() throws {
        let schema = try FullReading.objectSchema()
        #expect(schema.className == "full_reading")
        #expect(schema.kind == .asymmetric)
        #expect(schema.primaryKey == "_id")
        #expect(
            schema.properties.map(\.name) == [
                "_id", "deviceId", "flag", "small", "count32", "ratio", "value", "raw", "takenAt", "amount", "serial",
                "note", "maybeCount", "unit", "samples", "tags", "labels", "location", "path", "station", "payload",
            ])
        #expect(schema[property: "deviceId"] == Property(name: "deviceId", type: .string, isIndexed: true))
        #expect(schema[property: "small"]?.type == .int)
        #expect(schema[property: "note"] == Property(name: "note", type: .string, isOptional: true))
        #expect(schema[property: "tags"] == Property(name: "tags", type: .string, isOptional: true, collection: .list))
        #expect(schema[property: "labels"] == Property(name: "labels", type: .string, collection: .map))
        #expect(
            schema[property: "location"] == Property(name: "location", type: .object, isOptional: true, objectClassName: "ModelLocation"))
        #expect(schema[property: "path"] == Property(name: "path", type: .object, collection: .list, objectClassName: "ModelLocation"))
        #expect(schema[property: "station"] == Property(name: "station", type: .object, isOptional: true, objectClassName: "ModelStation"))
        #expect(schema[property: "payload"] == Property(name: "payload", type: .mixed, isOptional: true))
        #expect(try ModelLocation.objectSchema().kind == .embedded)
        #expect(try ModelStation.objectSchema().kind == .topLevel)
    }

    @Test func theSchemaIsDerivedOncePerType() throws {
        #expect(try TypeSchema.of(FullReading.self) === TypeSchema.of(FullReading.self))
    }

    @Test func theRealmSchemaIncludesEmbeddedTypesAndLinkTargets() throws {
        let directory = try TemporaryDirectory()
        let realm = try Realm(configuration: syncedConfiguration([FullReading.self], in: directory, sink: MemorySink()))
        #expect(realm.schema.classNames == ["full_reading", "ModelLocation", "ModelStation"])
        #expect(realm.schema.structuralErrors(synced: true).isEmpty)
    }

    @Test func anInstanceEncodesEveryTypeAsDocumented() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        let realm = try Realm(configuration: syncedConfiguration([FullReading.self], in: directory, sink: sink))
        try realm.write { realm.create(FullReading.self, value: fullReadingInstance()) }
        let documents = try sink.documents()
        #expect(documents.count == 1)
        #expect(documents.first?.collection == "full_reading")
        let document = try #require(documents.first?.document)
        #expect(document == expectedFullReading)
        #expect(realm.schema.validate(document, against: "full_reading").isEmpty)
    }

    @Test func dictionaryArrayAndInstanceFormsEncodeTheSameBytes() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        let realm = try Realm(configuration: syncedConfiguration([FullReading.self], in: directory, sink: sink))
        let arrayForm: [Any] = try FullReading.objectSchema().properties.indices.map { index -> Any in
            let swiftNames = [
                "id", "deviceId", "flag", "small", "count32", "ratio", "value", "raw", "takenAt", "amount",
                "serial", "note", "maybeCount", "unit", "samples", "tags", "labels", "location", "path",
                "station", "payload",
            ]
            return swiftNames[index] == "unit" ? "F" : makeFullReadingDictionary()[swiftNames[index]]!
        }
        try realm.write { realm.create(FullReading.self, value: fullReadingInstance()) }
        try realm.write { realm.create(FullReading.self, value: makeFullReadingDictionary()) }
        try realm.write { realm.create(FullReading.self, value: arrayForm) }
        let transactions = sink.transactions
        #expect(transactions.count == 3)
        #expect(transactions[0].bytes == transactions[1].bytes)
        #expect(transactions[0].bytes == transactions[2].bytes)
    }

    @Test func aDictionaryMayNameAPropertyByItsStoredNameAndTheSwiftNameWins() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        let realm = try Realm(configuration: syncedConfiguration([FullReading.self], in: directory, sink: sink))
        let otherId = ObjectId.generate()
        var byStoredName = makeFullReadingDictionary()
        byStoredName["id"] = nil
        byStoredName["_id"] = fixedId
        var byBothNames = makeFullReadingDictionary()
        byBothNames["_id"] = otherId
        // Two transactions: both objects get the primary key fixedId.
        try realm.write { realm.create(FullReading.self, value: byStoredName) }
        try realm.write { realm.create(FullReading.self, value: byBothNames) }
        let documents = try sink.documents()
        #expect(documents.count == 2)
        #expect(documents.first?.document == expectedFullReading)
        #expect(documents.last?.document == expectedFullReading)
    }

    @Test func missingValuesTakeDefaultsNilsEmptyCollectionsAndANewId() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        let realm = try Realm(configuration: syncedConfiguration([FullReading.self], in: directory, sink: sink))
        var dictionary = makeFullReadingDictionary()
        for key in ["id", "note", "unit", "samples", "labels", "location", "path", "station", "payload"] {
            dictionary[key] = nil
        }
        try realm.write { realm.create(FullReading.self, value: dictionary) }
        let document = try #require(try sink.documents().first?.document)
        guard case .objectId = document["_id"] else { Issue.record("no generated _id"); return }
        #expect(document["unit"] == "F")
        #expect(document["note"] == .null)
        #expect(document["samples"] == .array([]))
        #expect(document["labels"] == .document([:]))
        #expect(document["location"] == .null)
        #expect(document["payload"] == .null)
    }

    @Test func aTransactionCommitsAllItsObjectsAsOneUnit() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        let realm = try Realm(configuration: syncedConfiguration([WeatherSensor.self], in: directory, sink: sink))
        try realm.write {
            for index in 0..<10 {
                realm.create(
                    WeatherSensor.self,
                    value: [
                        "deviceId": "d\(index)", "temperatureInFahrenheit": index,
                        "barometricPressureInHg": 30, "windSpeedInMph": index,
                    ])
            }
        }
        let transaction = try #require(sink.transactions.first)
        #expect(sink.transactions.count == 1)
        #expect(transaction.records.count == 10)
        #expect(transaction.records.first?.range.lowerBound == 0)
        #expect(transaction.records.last?.range.upperBound == transaction.bytes.count)
        for (previous, next) in zip(transaction.records, transaction.records.dropFirst()) {
            #expect(previous.range.upperBound == next.range.lowerBound)
        }
        #expect(try sink.documents().map { $0.document["deviceId"] } == (0..<10).map { .string("d\($0)") })
    }
}
