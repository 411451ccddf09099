import Foundation
import IngestCore
import Testing
@testable import DataIngest
import IngestTestSupport
import IngestSupport

/// One property of each scalar type `create` encodes inline.
final class ScalarReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: Int
    @Persisted var flag: Bool
    @Persisted var wide: Int64
    @Persisted var ratio: Float
    @Persisted var value: Double
    @Persisted var name: String
    @Persisted var ref: ObjectId
    @Persisted var takenAt: Date
}

/// A subclass: its instances are boxed with a different metadata word.
final class KeyedReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: String
    @Persisted var count: Int
}

/// Names of many lengths, for matching dictionary keys by bytes.
final class LongNamedReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var a: Int
    @Persisted var abcd: Int
    @Persisted var abcdefg: Int
    @Persisted var abcdefgh: Int
    @Persisted var abcdefghijklmno: Int
    @Persisted var abcdefghijklmnop: Int
    @Persisted var abcdefghijklmnopqrstuvwxyz: Int
}

class BaseSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var level: Double
}

final class DerivedSensor: BaseSensor {}

private let when = Date(timeIntervalSince1970: 1_700_000_000.5)
private let ref = ObjectId(high: 0x65A1_F0C2_E4B0_A1B2, low: 0xC3D4_E5F6)

/// `create`'s fast path (``ExistentialPayload``, ``FastProperty``) must accept
/// and encode exactly what the property codecs do.
@Suite struct CreateFastPathTests {
    let directory: TemporaryDirectory
    let sink = MemorySink()
    let realm: Realm

    init() throws {
        directory = try TemporaryDirectory()
        realm = try Realm(
            configuration: syncedConfiguration(
                [ScalarReading.self, KeyedReading.self, LongNamedReading.self, BaseSensor.self], in: directory, sink: sink))
    }

    private let expected: BSONDocument = [
        "_id": .int64(7), "flag": .bool(true), "wide": .int64(-9_000_000_000), "ratio": .double(0.5),
        "value": .double(2.25), "name": "a name longer than fifteen bytes", "ref": .objectId(ref),
        "takenAt": .datetime(1_700_000_000_500),
    ]

    @Test(.disabled(if: PortableFallbacks.areForced, "DATAINGEST_PORTABLE=1 turns this fast path off"))
    func theExistentialLayoutIsConfirmedSoTheFastPathRuns() {
        #expect(ExistentialPayload.isVerified)
    }

    @Test func exactValuesAndStandardConversionsEncodeLikeTheCodecs() throws {
        let exact: [String: Any] = [
            "_id": 7, "flag": true, "wide": Int64(-9_000_000_000), "ratio": Float(0.5), "value": 2.25,
            "name": "a name longer than fifteen bytes", "ref": ref, "takenAt": when,
        ]
        // Each conversion the codecs accept, one property at a time.
        var converted: [[String: Any]] = []
        for (key, value) in [
            ("_id", Int64(7)), ("wide", -9_000_000_000 as Int), ("ratio", 0.5 as Double),
            ("value", Float(2.25)), ("value", 2.25 as Double), ("ratio", 0.5 as Float),
        ] as [(String, Any)] {
            var dictionary = exact
            dictionary[key] = value
            converted.append(dictionary)
        }
        var integral = exact
        integral["value"] = 3
        integral["ratio"] = 2
        try realm.write { realm.create(ScalarReading.self, value: exact) }
        for dictionary in converted {
            try realm.write { realm.create(ScalarReading.self, value: dictionary) }
        }
        try realm.write { realm.create(ScalarReading.self, value: integral) }
        // Conversions the fast path leaves to the codec: an integral Double
        // for an Int, an Int32 for an Int64, a Substring for a String.
        var slow = exact
        slow["_id"] = 7.0
        slow["wide"] = Int32(-9)
        slow["name"] = "a name longer than fifteen bytes"[...]
        try realm.write { realm.create(ScalarReading.self, value: slow) }

        let documents = try sink.documents().map(\.document)
        #expect(documents.count == converted.count + 3)
        for document in documents.prefix(converted.count + 1) { #expect(document == expected) }
        var integralExpected = expected
        integralExpected["value"] = .double(3)
        integralExpected["ratio"] = .double(2)
        #expect(documents[converted.count + 1] == integralExpected)
        var slowExpected = expected
        slowExpected["wide"] = .int64(-9)
        #expect(documents[converted.count + 2] == slowExpected)
    }

    @Test func instancesEncodeTheSameBytesWhateverTheirStaticType() throws {
        let reading = ScalarReading()
        reading._id = 7
        reading.flag = true
        reading.wide = -9_000_000_000
        reading.ratio = 0.5
        reading.value = 2.25
        reading.name = "a name longer than fifteen bytes"
        reading.ref = ref
        reading.takenAt = when
        try realm.write { realm.create(ScalarReading.self, value: reading) }
        try realm.write { realm.create(ScalarReading.self, value: reading as AsymmetricObject) }
        try realm.write { realm.create(ScalarReading.self, value: reading as AnyObject) }
        let derived = DerivedSensor()
        derived.level = 1.5
        try realm.write { realm.create(BaseSensor.self, value: derived) }
        try realm.write { realm.create(BaseSensor.self, value: derived as BaseSensor) }
        let documents = try sink.documents()
        #expect(documents.prefix(3).allSatisfy { $0.document == expected })
        #expect(documents[3].document == ["_id": .objectId(derived._id), "level": .double(1.5)])
        #expect(documents[3].document == documents[4].document)
    }

    @Test func wrongTypesStillNameTheProperty() {
        let cases: [(String, Any, String)] = [
            ("ratio", 1e300, "expected Float, found Double (1e+300)"),
            ("flag", 1, "expected Bool, found Int (1)"),
            ("ref", "65a1f0c2e4b0a1b2c3d4e5f6", #"expected ObjectId, found String ("65a1f0c2e4b0a1b2c3d4e5f6")"#),
            ("_id", 2.5, "expected Int, found Double (2.5)"),
        ]
        for (key, value, message) in cases {
            var dictionary: [String: Any] = [
                "_id": 7, "flag": true, "wide": 1, "ratio": 0.5, "value": 2.25, "name": "n", "ref": ref, "takenAt": when,
            ]
            dictionary[key] = value
            let error = expectRealmError(.wrongValueType) {
                try realm.write { realm.create(ScalarReading.self, value: dictionary) }
            }
            #expect(error?.propertyName == key)
            #expect(error?.message.hasPrefix("ScalarReading.\(key): \(message)") == true, "\(error?.message ?? "")")
        }
        #expect(sink.transactions.isEmpty)
    }

    @Test func keysOfEveryLengthMatchWhetherInlineOrNot() throws {
        let names = ["a", "abcd", "abcdefg", "abcdefgh", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnopqrstuvwxyz"]
        // Keys built at run time (not literals), so long ones are separate
        // heap strings and are matched by their bytes.
        var dictionary: [String: Any] = ["_id": ref]
        for (index, name) in names.enumerated() { dictionary[String(decoding: Array(name.utf8), as: UTF8.self)] = index }
        try realm.write { realm.create(LongNamedReading.self, value: dictionary) }
        let document = try #require(try sink.documents().first?.document)
        #expect(document.keys == ["_id"] + names)
        for (index, name) in names.enumerated() { #expect(document[name] == .int64(Int64(index))) }
        // A key one byte off in any position is unknown.
        for name in names {
            for position in [0, name.utf8.count - 1] {
                var bytes = Array(name.utf8)
                bytes[position] = UInt8(ascii: "Z")
                var wrong = dictionary
                let misspelt = String(decoding: bytes, as: UTF8.self)
                wrong[misspelt] = 1
                let error = expectRealmError(.unknownProperty) {
                    try realm.write { realm.create(LongNamedReading.self, value: wrong) }
                }
                #expect(error?.message.contains("has no property '\(misspelt)'") == true)
            }
        }
    }

    @Test func duplicateKeysAreFoundAmongManyOfEachKind() throws {
        for duplicate in [0, 1_499] {
            let error = expectRealmError(.duplicatePrimaryKey) {
                try realm.write {
                    for id in 0..<1_500 { realm.create(KeyedReading.self, value: ["_id": "key-\(id)", "count": id]) }
                    realm.create(KeyedReading.self, value: ["_id": "key-\(duplicate)", "count": 0])
                }
            }
            #expect(error?.message.contains(#""key-\#(duplicate)""#) == true)
            let intError = expectRealmError(.duplicatePrimaryKey) {
                try realm.write {
                    for id in 0..<1_500 { realm.create(ScalarReading.self, value: [id, true, 1, 0.5, 2.25, "n", ref, when] as [Any]) }
                    realm.create(ScalarReading.self, value: [duplicate, true, 1, 0.5, 2.25, "n", ref, when] as [Any])
                }
            }
            #expect(intError?.message.contains("primary key \(duplicate);") == true)
        }
        // String keys as Swift compares them: bytes for ASCII (keys of every
        // length around the hashed 8-byte words), canonical equivalence beyond it.
        for length in [1, 7, 8, 9, 16, 40] {
            let key = String(repeating: "k", count: length)
            try realm.write {
                realm.create(KeyedReading.self, value: ["_id": key, "count": 0])
                realm.create(KeyedReading.self, value: ["_id": key + "x", "count": 1])
                realm.create(KeyedReading.self, value: ["_id": "x" + key, "count": 2])
            }
            expectRealmError(.duplicatePrimaryKey) {
                try realm.write {
                    realm.create(KeyedReading.self, value: ["_id": key, "count": 0])
                    realm.create(KeyedReading.self, value: ["_id": String(key), "count": 1])
                }
            }
        }
        expectRealmError(.duplicatePrimaryKey) {
            try realm.write {
                realm.create(KeyedReading.self, value: ["_id": "caf\u{E9}", "count": 0])
                realm.create(KeyedReading.self, value: ["_id": "cafe\u{301}", "count": 1])
            }
        }
        // The same keys in a later transaction are accepted: the set is emptied.
        try realm.write {
            for id in 0..<1_500 { realm.create(ScalarReading.self, value: [id, true, 1, 0.5, 2.25, "n", ref, when] as [Any]) }
            for _ in 0..<1_500 { realm.create(BaseSensor.self, value: ["level": 1.0]) }
        }
        #expect(sink.transactions.map(\.records.count) == [3, 3, 3, 3, 3, 3, 3_000])
    }
}
