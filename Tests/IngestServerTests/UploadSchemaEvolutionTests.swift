import IngestCore
import Testing
@testable import IngestServer

/// Development mode's schema growth, without a server.
@Suite("Upload: schema evolution")
struct UploadSchemaEvolutionTests {
    static let base = try! Schema([
        ObjectSchema(
            className: "Log", kind: .asymmetric,
            properties: [
                IngestCore.Property(name: "_id", type: .objectId, isPrimaryKey: true),
                IngestCore.Property(name: "message", type: .string),
            ])
    ])

    @Test("nothing missing: no change")
    func unchanged() {
        let records: [(collection: String, document: BSONDocument)] = [("Log", ["_id": .objectId(.generate()), "message": .string("m")])]
        #expect(SchemaEvolution.grow(Self.base, records: records, clientSchema: nil) == nil)
    }

    @Test("new fields become optional properties with inferred types; existing ones never change")
    func newFields() throws {
        let records: [(collection: String, document: BSONDocument)] = [
            (
                "Log",
                [
                    "_id": .objectId(.generate()), "message": .int32(3), "level": .int64(2), "at": .datetime(1),
                    "extra": .document(["a": .int32(1)]), "raw": .binary(BSONBinary(bytes: [1])),
                ]
            )
        ]
        let grown = try #require(SchemaEvolution.grow(Self.base, records: records, clientSchema: nil))
        let log = try #require(grown["Log"])
        #expect(log[property: "message"]?.type == .string)
        #expect(log[property: "level"] == IngestCore.Property(name: "level", type: .int, isOptional: true))
        #expect(log[property: "at"]?.type == .date)
        #expect(log[property: "extra"]?.type == .mixed)
        #expect(log[property: "raw"]?.type == .data)
        // The type change of `message` is still a violation.
        #expect(grown.validate(records[0].document, against: "Log").map(\.code) == [.wrongType])
    }

    @Test("a new collection comes from the client's header schema, with its embedded types")
    func clientSchema() throws {
        let client = try Schema([
            ObjectSchema(
                className: "Sensor", kind: .asymmetric,
                properties: [
                    IngestCore.Property(name: "_id", type: .uuid, isPrimaryKey: true),
                    IngestCore.Property(name: "where", type: .object, isOptional: true, objectClassName: "Place"),
                ]),
            ObjectSchema(className: "Place", kind: .embedded, properties: [IngestCore.Property(name: "x", type: .double)]),
        ])
        let records: [(collection: String, document: BSONDocument)] = [
            ("Sensor", ["_id": .binary(BSONBinary(subtype: 4, bytes: Array(repeating: 7, count: 16)))])
        ]
        let grown = try #require(SchemaEvolution.grow(Self.base, records: records, clientSchema: client))
        #expect(grown["Sensor"] == client["Sensor"])
        #expect(grown["Place"]?.kind == .embedded)
    }

    @Test("many records of a new class: later records' extra fields are still learned, in both a new and a known class")
    func manyRecordsOfANewClass() throws {
        var records: [(collection: String, document: BSONDocument)] = []
        for index in 0..<1_000 {
            records.append(("Reading", ["_id": .objectId(.generate()), "value": .double(Double(index))]))
            records.append(("Log", ["_id": .objectId(.generate()), "message": .string("m"), "level": .int32(1)]))
        }
        records.append(("Reading", ["_id": .objectId(.generate()), "value": .double(1), "unit": .string("C")]))
        records.append(("Log", ["_id": .objectId(.generate()), "message": .string("m"), "level": .int32(1), "at": .datetime(5)]))
        records.append(("Reading", ["value": .double(2)]))  // fields all known, no _id: changes nothing
        let grown = try #require(SchemaEvolution.grow(Self.base, records: records, clientSchema: nil))
        let reading = try #require(grown["Reading"])
        #expect(reading.properties.map(\.name) == ["_id", "value", "unit"])
        #expect(reading[property: "_id"]?.isPrimaryKey == true)
        #expect(reading[property: "unit"] == IngestCore.Property(name: "unit", type: .string, isOptional: true))
        let log = try #require(grown["Log"])
        #expect(log.properties.map(\.name) == ["_id", "message", "level", "at"])
        #expect(log[property: "at"]?.type == .date)
    }

    @Test("names colliding by letter case, reserved names and collections without a usable _id are not learned")
    func refusedNames() {
        let records: [(collection: String, document: BSONDocument)] = [
            ("Log", ["_id": .objectId(.generate()), "Message": .string("x"), "_ingested_at": .int32(1)]),
            ("log", ["_id": .objectId(.generate())]),
            ("NoId", ["value": .double(1)]),
            ("BadId", ["_id": .double(1)]),
            ("bad name", ["_id": .objectId(.generate())]),
        ]
        #expect(SchemaEvolution.grow(Self.base, records: records, clientSchema: nil) == nil)
    }
}
