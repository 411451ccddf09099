import Foundation
import Testing
@testable import IngestCore

/// A weather sensor schema with an embedded location, a link and collections.
private func sensorSchema() throws -> Schema {
    try Schema([
        ObjectSchema(
            className: "WeatherSensor", kind: .asymmetric,
            properties: [
                Property(name: "_id", type: .objectId, isPrimaryKey: true),
                Property(name: "deviceId", type: .string, isIndexed: true),
                Property(name: "temperatureInFahrenheit", type: .float),
                Property(name: "windSpeedInMph", type: .int),
                Property(name: "note", type: .string, isOptional: true),
                Property(name: "readings", type: .double, collection: .list),
                Property(name: "labels", type: .string, isOptional: true, collection: .map),
                Property(name: "location", type: .object, isOptional: true, objectClassName: "Location"),
                Property(name: "history", type: .object, collection: .list, objectClassName: "Location"),
                Property(name: "station", type: .object, isOptional: true, objectClassName: "Station"),
                Property(name: "extra", type: .mixed, isOptional: true),
                Property(name: "serial", type: .uuid, isOptional: true),
            ]),
        ObjectSchema(
            className: "Location", kind: .embedded,
            properties: [
                Property(name: "latitude", type: .double),
                Property(name: "longitude", type: .double),
            ]),
        ObjectSchema(
            className: "Station", kind: .topLevel,
            properties: [
                Property(name: "_id", type: .string, isPrimaryKey: true)
            ]),
    ])
}

@Suite struct SchemaCodingTests {
    @Test func jsonRoundTripsAndHasTheDocumentedShape() throws {
        let schema = try sensorSchema()
        let data = try schema.jsonData()
        #expect(try Schema(json: data) == schema)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#""primaryKey" : "_id""#))
        #expect(text.contains(#""objectClass" : "Location""#))
        #expect(text.contains(#""collection" : "list""#))

        let handWritten = #"""
            [{"name": "Log", "kind": "asymmetric", "primaryKey": "_id",
              "properties": [{"name": "_id", "type": "objectId"}, {"name": "message", "type": "string", "indexed": true}]}]
            """#
        let log = try Schema(json: Data(handWritten.utf8))
        #expect(log["Log"]?.kind == .asymmetric)
        #expect(log["Log"]?.primaryKey == "_id")
        #expect(log["Log"]?[property: "message"]?.isIndexed == true)
        #expect(log["Log"]?[property: "message"]?.collection == .single)
    }

    @Test(arguments: [
        (
            #"[{"name":"A","properties":[{"name":"x","type":"flaot"}]}]"#,
            #"schema JSON at [0].properties[0].type: unknown property type "flaot"; expected one of bool, int, float, double, string, data, date, decimal128, objectId, uuid, mixed, object"#
        ),
        (
            #"[{"name":"A","properties":[{"type":"int"}]}]"#,
            #"schema JSON at [0].properties[0]: the required key "name" is missing"#
        ),
        (
            #"[{"name":"A","properties":[{"name":"x","type":"int","optinal":true}]}]"#,
            #"schema JSON at [0].properties[0].optinal: unknown property key "optinal"; the keys are name, type, optional, collection, objectClass, indexed"#
        ),
        (
            #"[{"name":"A","primaryKey":"id","properties":[{"name":"_id","type":"int"}]}]"#,
            #"schema JSON at [0].primaryKey: the primary key 'id' of A is not one of its properties"#
        ),
        (
            #"[{"name":"A","kind":"synced","properties":[]}]"#,
            #"schema JSON at [0].kind: unknown class kind "synced"; expected one of topLevel, embedded, asymmetric"#
        ),
        (
            #"[{"name":"A","properties":[{"name":"x","type":"int","optional":"yes"}]}]"#,
            #"schema JSON at [0].properties[0].optional: expected true or false"#
        ),
        (
            #"[{"name":"A","properties":[]},{"name":"A","properties":[]}]"#,
            #"schema JSON at the top level: two classes are named 'A'; class names must be unique: rename one (override className()) or list only one of them"#
        ),
    ])
    func jsonErrorsNameThePath(json: String, message: String) {
        #expect {
            try Schema(json: Data(json.utf8))
        } throws: { error in
            let error = error as? SchemaError
            return error?.code == .invalidJSON && error?.message == message
        }
    }

    @Test func invalidJSONSyntaxIsReported() {
        #expect {
            try Schema(json: Data("[{".utf8))
        } throws: { error in
            (error as? SchemaError)?.message.hasPrefix("schema JSON is not valid JSON") == true
        }
    }

    @Test func bsonRoundTripsAndReportsErrors() throws {
        let schema = try sensorSchema()
        #expect(try Schema(bsonDocument: schema.bsonDocument) == schema)
        let sensor = schema.bsonDocument["objects"]
        guard case .array(let objects)? = sensor, case .document(let first) = objects[0] else {
            Issue.record("no objects array"); return
        }
        #expect(first["primaryKey"] == .string("_id"))
        #expect(first["kind"] == .string("asymmetric"))

        var bad = first
        bad["properties"] = .array([.document(["name": "x", "type": .int32(3)])])
        #expect {
            try ObjectSchema(bsonDocument: bad, path: "objects[0]")
        } throws: { error in
            (error as? SchemaError)?.message == "schema BSON at objects[0].properties[0].type: expected a string, found int32"
        }
        #expect {
            try Schema(bsonDocument: ["classes": .array([])])
        } throws: { error in
            (error as? SchemaError)?.code == .invalidBSON
        }
    }
}

@Suite struct SchemaStructureTests {
    private func errors(_ objects: [ObjectSchema], synced: Bool = true) throws -> [SchemaError] {
        try Schema(objects).structuralErrors(synced: synced)
    }

    @Test func aValidSchemaHasNoErrors() throws {
        #expect(try sensorSchema().structuralErrors(synced: true).isEmpty)
    }

    @Test func syncedTypesNeedTheIdPrimaryKey() throws {
        let found = try errors([
            ObjectSchema(
                className: "Reading", kind: .asymmetric,
                properties: [
                    Property(name: "key", type: .string, isPrimaryKey: true)
                ])
        ])
        #expect(found.map(\.code) == [.missingPrimaryKey])
        #expect(
            found.first?.message
                == "Reading: every synced type needs the primary key '_id', but its primary key is 'key'; declare @Persisted(primaryKey: true) var _id: ObjectId (or map your key to '_id' with propertiesMapping())"
        )
        // Local schemas do not need `_id`.
        #expect(
            try errors(
                [
                    ObjectSchema(
                        className: "Setting", kind: .topLevel,
                        properties: [
                            Property(name: "key", type: .string, isPrimaryKey: true)
                        ])
                ], synced: false
            ).isEmpty)
    }

    @Test func nothingMayLinkToAnAsymmetricClass() throws {
        let found = try errors([
            ObjectSchema(className: "Sensor", kind: .asymmetric, properties: [Property(name: "_id", type: .objectId, isPrimaryKey: true)]),
            ObjectSchema(
                className: "Owner", kind: .topLevel,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "sensor", type: .object, isOptional: true, objectClassName: "Sensor"),
                ]),
        ])
        #expect(found.map(\.code) == [.linkToAsymmetric])
        #expect(
            found.first?.message
                == "Owner.sensor links to the asymmetric class 'Sensor'; nothing may link to an asymmetric object (it is never stored on the device): remove the property or make 'Sensor' an EmbeddedObject"
        )
    }

    @Test func primaryKeyRules() throws {
        let found = try errors([
            ObjectSchema(className: "A", kind: .asymmetric, properties: [Property(name: "_id", type: .double, isPrimaryKey: true)]),
            ObjectSchema(className: "E", kind: .embedded, properties: [Property(name: "k", type: .int, isPrimaryKey: true)]),
        ])
        #expect(found.map(\.code) == [.invalidPrimaryKey, .invalidPrimaryKey])
        #expect(found[0].message == "A._id: a primary key must be a non-optional Int, String, ObjectId or UUID, not double")
        #expect(found[1].message == "E.k: an embedded object cannot have a primary key; remove primaryKey: true")
    }

    @Test func objectPropertyRules() throws {
        let found = try errors([
            ObjectSchema(
                className: "A", kind: .asymmetric,
                properties: [
                    Property(name: "_id", type: .objectId, isPrimaryKey: true),
                    Property(name: "missing", type: .object, isOptional: true, objectClassName: "Nowhere"),
                    Property(name: "required", type: .object, objectClassName: "E"),
                    Property(name: "list", type: .object, isOptional: true, collection: .list, objectClassName: "E"),
                    Property(name: "keyless", type: .object, isOptional: true, objectClassName: "T"),
                    Property(name: "score", type: .double, isIndexed: true),
                    Property(name: "a.b", type: .int),
                ]),
            ObjectSchema(className: "E", kind: .embedded, properties: [Property(name: "v", type: .int)]),
            ObjectSchema(className: "T", kind: .topLevel, properties: [Property(name: "v", type: .int)]),
        ])
        #expect(
            found.map(\.code) == [
                .unknownTargetClass, .unsupportedPropertyType, .unsupportedPropertyType,
                .unsupportedPropertyType, .invalidIndex, .invalidName, .missingPrimaryKey,
            ])
        #expect(
            found[0].message == "A.missing refers to class 'Nowhere', which is not in the schema; add 'Nowhere' to the schema (objectTypes)"
        )
        #expect(found[1].message == "A.required: an object property must be optional; declare it as E?")
        #expect(found[2].message == "A.list: a list of objects cannot hold nil; declare it as List<E>")
        #expect(found[3].message.hasPrefix("A.keyless links to 'T', which has no primary key"))
        #expect(found[4].message.hasPrefix("A.score: a double property cannot be indexed"))
        #expect(found[6].className == "T")
    }

    @Test func duplicateClassNamesAreRejected() {
        #expect(throws: SchemaError.self) {
            try Schema([
                ObjectSchema(className: "A", kind: .topLevel, properties: []),
                ObjectSchema(className: "A", kind: .embedded, properties: []),
            ])
        }
    }
}

@Suite struct SchemaValidationTests {
    private func valid() -> BSONDocument {
        [
            "_id": .objectId(ObjectId.generate()),
            "deviceId": "WX1278UIT",
            "temperatureInFahrenheit": .double(66.69999694824219),
            "windSpeedInMph": .int64(2),
            "readings": .array([.double(1), .double(2.5)]),
            "labels": .document(["site": "roof", "old": .null]),
            "location": .document(["latitude": .double(48.1), "longitude": .double(11.6)]),
            "history": .array([.document(["latitude": .double(1), "longitude": .double(2)])]),
            "station": "munich-1",
            "extra": .array([.int32(1), "two", .document(["three": .bool(true)])]),
            "serial": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(repeating: 7, count: 16))),
        ]
    }

    @Test func aValidDocumentHasNoViolations() throws {
        let schema = try sensorSchema()
        #expect(schema.validate(valid(), against: "WeatherSensor").isEmpty)
        // Optionals and collections may be absent; int32 is accepted for int.
        let minimal: BSONDocument = [
            "_id": .objectId(ObjectId.generate()), "deviceId": "d",
            "temperatureInFahrenheit": .double(1), "windSpeedInMph": .int32(2),
        ]
        #expect(schema.validate(minimal, against: "WeatherSensor").isEmpty)
    }

    @Test func eachViolationNamesThePath() throws {
        let schema = try sensorSchema()
        var document = valid()
        document["deviceId"] = nil
        document["windSpeedInMph"] = .double(2)
        document["temperatureInFahrenheit"] = .double(1e300)
        document["note"] = .int64(3)
        document["readings"] = .array([.double(1), "x", .null])
        document["labels"] = .document(["a.b": "x", "ok": .int64(1)])
        document["location"] = .document(["latitude": "north"])
        document["station"] = .int64(4)
        document["extra"] = .regex(pattern: "a", options: "")
        document["serial"] = .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: [1, 2]))
        document["colour"] = "red"
        let found = schema.validate(document, against: "WeatherSensor")
        let byPath = Dictionary(found.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byPath["windSpeedInMph"]?.code == .wrongType)
        #expect(byPath["windSpeedInMph"]?.reason == "expected an int64 (or int32) for int, found double")
        #expect(byPath["temperatureInFahrenheit"]?.code == .outOfRange)
        #expect(byPath["note"]?.reason == "expected a string for string?, found int64")
        #expect(byPath["readings[1]"]?.code == .wrongElementType)
        #expect(byPath["readings[2]"]?.code == .nullNotAllowed)
        #expect(byPath["labels.a.b"]?.code == .invalidMapKey)
        #expect(byPath["labels.ok"]?.code == .wrongElementType)
        #expect(byPath["location.latitude"]?.code == .wrongType)
        #expect(byPath["location.longitude"]?.code == .missingRequiredField)
        #expect(byPath["station"]?.reason == "expected a link to Station (its primary key, a string), found int64")
        #expect(byPath["extra"]?.reason == "a mixed value cannot be a BSON regex")
        #expect(byPath["serial"]?.code == .wrongType)
        #expect(byPath["colour"]?.reason == "WeatherSensor has no property 'colour'")
        #expect(byPath["deviceId"]?.reason == "the required string property 'deviceId' of WeatherSensor is missing")
        #expect(found.count == 14)
    }

    @Test func nullsDuplicatesAndUnknownClasses() throws {
        let schema = try sensorSchema()
        var document = valid()
        document["_id"] = .null
        document.append("deviceId", "again")
        let found = schema.validate(document, against: "WeatherSensor")
        #expect(found.map(\.code) == [.nullNotAllowed, .duplicateField])
        #expect(schema.validate(document, against: "Nope").first?.code == .unknownClass)
    }

    /// Scalar-only documents take the allocation-free quick pass; each case
    /// must get the same answer as the full check gives.
    @Test func scalarDocumentsGetTheSameAnswerFromTheQuickPass() throws {
        let schema = try sensorSchema()
        let id = BSON.objectId(ObjectId.generate())
        func codes(_ document: BSONDocument) -> [SchemaViolation.Code] {
            schema.validate(document, against: "WeatherSensor").map(\.code)
        }
        let inOrder: BSONDocument = [
            "_id": id, "deviceId": "d", "temperatureInFahrenheit": .double(1),
            "windSpeedInMph": .int64(2), "note": .null,
        ]
        #expect(codes(inOrder).isEmpty)
        let shuffled: BSONDocument = [
            "windSpeedInMph": .int32(2), "note": "n", "deviceId": "d",
            "temperatureInFahrenheit": .double(-1), "_id": id,
        ]
        #expect(codes(shuffled).isEmpty)
        var duplicate = inOrder
        duplicate.append("deviceId", "again")
        #expect(codes(duplicate) == [.duplicateField])
        var nullRequired = inOrder
        nullRequired["deviceId"] = .null
        #expect(codes(nullRequired) == [.nullNotAllowed])
        var missing = inOrder
        missing["windSpeedInMph"] = nil
        #expect(codes(missing) == [.missingRequiredField])
        var tooLarge = inOrder
        tooLarge["temperatureInFahrenheit"] = .double(1e300)
        #expect(codes(tooLarge) == [.outOfRange])
        var wrongType = inOrder
        wrongType["windSpeedInMph"] = .double(2)
        #expect(codes(wrongType) == [.wrongType])
        var unknown = inOrder
        unknown["colour"] = "red"
        #expect(codes(unknown) == [.unknownField])
    }

    @Test func violationsAreBounded() throws {
        let schema = try sensorSchema()
        var document = valid()
        document["readings"] = .array(Array(repeating: "x", count: 1000))
        #expect(schema.validate(document, against: "WeatherSensor").count == Schema.maximumViolations)
    }
}
