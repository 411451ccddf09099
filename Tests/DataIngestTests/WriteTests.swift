import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

final class TaggedReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var small: Int8
    @Persisted var labels: Map<String, String>
}

private struct UserStop: Error {}

@Suite struct WriteTests {
    let directory: TemporaryDirectory
    let sink = MemorySink()
    let realm: Realm

    init() throws {
        directory = try TemporaryDirectory()
        realm = try Realm(configuration: syncedConfiguration([WeatherSensor.self, TaggedReading.self], in: directory, sink: sink))
    }

    private func sensor(_ changes: [String: Any?] = [:]) -> [String: Any] {
        var value: [String: Any] = [
            "_id": ObjectId.generate(), "deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
        ]
        for (key, change) in changes { value[key] = change.map { $0 } ?? nil }
        return value
    }

    /// Runs one write that must fail with `code`; nothing may be committed.
    @discardableResult
    private func failingWrite(
        _ code: RealmError.Code, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () -> Void
    ) -> RealmError? {
        let error = expectRealmError(code, sourceLocation: sourceLocation) { try realm.write(body) }
        #expect(sink.transactions.isEmpty, sourceLocation: sourceLocation)
        #expect(!realm.isInWriteTransaction, sourceLocation: sourceLocation)
        return error
    }

    @Test func aValueOfTheWrongTypeNamesTheProperty() {
        let error = failingWrite(.wrongValueType) {
            realm.create(WeatherSensor.self, value: sensor(["windSpeedInMph": "fast"]))
        }
        #expect(
            error?.message == #"WeatherSensor.windSpeedInMph: expected Int, found String ("fast"); pass a value of the property's type"#)
        #expect(error?.className == "WeatherSensor")
        #expect(error?.propertyName == "windSpeedInMph")
    }

    @Test func inexactNumbersAreRejected() {
        failingWrite(.wrongValueType) { realm.create(WeatherSensor.self, value: sensor(["windSpeedInMph": 2.5])) }
        let error = failingWrite(.wrongValueType) { realm.create(WeatherSensor.self, value: sensor(["temperatureInFahrenheit": 1e300])) }
        #expect(
            error?.message
                == "WeatherSensor.temperatureInFahrenheit: expected Float, found Double (1e+300); pass a value of the property's type")
        failingWrite(.wrongValueType) {
            realm.create(TaggedReading.self, value: ["small": 300])
        }
    }

    @Test func standardNumericConversionsAreAccepted() throws {
        try realm.write {
            realm.create(
                WeatherSensor.self,
                value: sensor([
                    "windSpeedInMph": 3.0, "temperatureInFahrenheit": 70,
                    "barometricPressureInHg": Float(29.5),
                ]))
            realm.create(TaggedReading.self, value: ["small": Int64(-100)])
        }
        let documents = try sink.documents()
        #expect(documents[0].document["windSpeedInMph"] == .int64(3))
        #expect(documents[0].document["temperatureInFahrenheit"] == .double(70))
        #expect(documents[1].document["small"] == .int64(-100))
    }

    @Test func nilForARequiredPropertyIsRejected() {
        let error = failingWrite(.wrongValueType) { realm.create(WeatherSensor.self, value: sensor(["deviceId": NSNull()])) }
        #expect(error?.message == "WeatherSensor.deviceId: expected String, found nil; pass a value of the property's type")
    }

    @Test func aMissingRequiredPropertyIsNamed() {
        let error = failingWrite(.missingRequiredProperty) { realm.create(WeatherSensor.self, value: sensor(["deviceId": nil])) }
        #expect(
            error?.message
                == "WeatherSensor.deviceId: the required String property is missing; give it a value, make it optional, or declare a default value"
        )
    }

    @Test func anUnknownPropertyIsNamed() {
        let error = failingWrite(.unknownProperty) { realm.create(WeatherSensor.self, value: sensor(["humidity": 40])) }
        #expect(
            error?.message
                == "WeatherSensor: WeatherSensor has no property 'humidity'; its properties are _id, deviceId, temperatureInFahrenheit, barometricPressureInHg, windSpeedInMph"
        )
    }

    @Test func tooManyArrayValuesAreRejected() {
        let error = failingWrite(.wrongValueType) {
            realm.create(WeatherSensor.self, value: [ObjectId.generate(), "d", 1.0, 2.0, 3, "extra"] as [Any])
        }
        #expect(
            error?.message
                == "WeatherSensor: the array has 6 values but WeatherSensor has 5 properties (_id, deviceId, temperatureInFahrenheit, barometricPressureInHg, windSpeedInMph); pass at most one value per property, in declaration order"
        )
    }

    @Test func aValueThatIsNoObjectFormIsRejected() {
        let error = failingWrite(.wrongValueType) { realm.create(WeatherSensor.self, value: 42) }
        #expect(
            error?.message
                == "WeatherSensor: expected a [String: Any] dictionary, an array in property order or a WeatherSensor instance, found Int (42)"
        )
    }

    @Test func anInvalidMapKeyIsRejected() {
        let reading = TaggedReading()
        reading.labels["a.b"] = "x"
        let error = failingWrite(.invalidMapKey) { realm.create(TaggedReading.self, value: reading) }
        #expect(
            error?.message
                == #"labels: the map key "a.b" cannot be stored; keys must be non-empty, contain no '.' or NUL and not start with '$'"#)
        failingWrite(.invalidMapKey) { realm.create(TaggedReading.self, value: ["small": 1, "labels": ["$set": "x"]]) }
    }

    @Test func aDuplicatePrimaryKeyInOneTransactionFailsTheWholeTransaction() throws {
        let id = try ObjectId(hex: "65a1f0c2e4b0a1b2c3d4e5f6")
        let error = failingWrite(.duplicatePrimaryKey) {
            realm.create(WeatherSensor.self, value: sensor(["_id": id]))
            realm.create(WeatherSensor.self, value: sensor())
            let again = WeatherSensor()
            again._id = id
            realm.create(WeatherSensor.self, value: again)
        }
        #expect(
            error?.message
                == "WeatherSensor: two objects in one transaction have the primary key ObjectId(65a1f0c2e4b0a1b2c3d4e5f6); give each object its own _id (e.g. ObjectId.generate())"
        )
        // The same id in the next transaction is the server's business (idempotent upserts).
        try realm.write { realm.create(WeatherSensor.self, value: sensor(["_id": id])) }
        #expect(sink.transactions.count == 1)
    }

    @Test func createOutsideAWriteWritesNothingAndTheNextWriteThrows() throws {
        realm.create(WeatherSensor.self, value: sensor())
        let error = expectRealmError(.notInWriteTransaction) { try realm.write {} }
        #expect(
            error?.message
                == "create(WeatherSensor.self, value:) was called outside a write transaction, so nothing was written; call it inside realm.write { }"
        )
        try realm.write { realm.create(WeatherSensor.self, value: sensor()) }
        #expect(sink.transactions.count == 1)
        #expect(sink.transactions[0].records.count == 1)
        expectRealmError(.notInWriteTransaction) { try realm.commitWrite() }
    }

    @Test func aNestedWriteThrowsAndTheOuterTransactionRollsBack() {
        let nested = expectRealmError(.nestedWriteTransaction) {
            try realm.write {
                realm.create(WeatherSensor.self, value: sensor())
                try realm.write {}
            }
        }
        #expect(
            nested?.message
                == "a write transaction is already open on this realm; write {} cannot be nested: move the inner writes into the outer block"
        )
        #expect(sink.transactions.isEmpty)
    }

    @Test func anErrorThrownInsideWriteRollsBackAndIsRethrown() throws {
        #expect(throws: UserStop.self) {
            try realm.write {
                realm.create(WeatherSensor.self, value: sensor())
                throw UserStop()
            }
        }
        #expect(sink.transactions.isEmpty)
        #expect(!realm.isInWriteTransaction)
        try realm.write { realm.create(WeatherSensor.self, value: sensor()) }
        #expect(sink.transactions.map(\.records.count) == [1])
    }

    @Test func aSinkFailureRollsBackAndIsReported() throws {
        sink.failCommits(with: UserStop())
        let error = failingWrite(.commitFailed) { realm.create(WeatherSensor.self, value: sensor()) }
        #expect(error?.underlyingError is UserStop)
        #expect(error?.message.hasPrefix("the transaction of 1 objects could not be committed and was rolled back") == true)
        sink.failCommits(with: nil)
        try realm.write { realm.create(WeatherSensor.self, value: sensor()) }
        #expect(sink.transactions.map(\.records.count) == [1])
    }

    @Test func aTypeOutsideTheRealmIsRejected() throws {
        let other = try Realm(configuration: syncedConfiguration([TaggedReading.self], in: directory, sink: sink, name: "other"))
        let error = expectRealmError(.typeNotInRealm) {
            try other.write { other.create(WeatherSensor.self, value: sensor()) }
        }
        #expect(
            error?.message
                == "WeatherSensor is not part of this realm's schema; add WeatherSensor.self to the configuration's objectTypes (or register it with Realm.registerTypes)"
        )
    }

    @Test func beginAndCommitWriteWorkLikeWrite() throws {
        try realm.beginWrite()
        realm.create(WeatherSensor.self, value: sensor())
        try realm.commitWrite()
        try realm.beginWrite()
        realm.create(WeatherSensor.self, value: sensor())
        realm.cancelWrite()
        #expect(sink.transactions.map(\.records.count) == [1])
    }
}
