import Foundation
import IngestCore
import Testing

@testable import RealmSync

/// Decoding every recorded upload and building its objects gives exactly
/// the documents of `expected.jsonl`, field by field and type by type.
@Suite("Recorded uploads become the expected documents")
struct RecordedIngestTests {
    /// The documents of a scenario's uploads in order, learning the schema
    /// from its first changeset (development mode).
    static func ingest(_ scenario: String, schema: Schema? = nil) throws -> (objects: [IngestedObject], schema: Schema) {
        var ingestor = ChangesetIngestor(schema: schema ?? Schema.empty, schemaMode: schema == nil ? .development : .fixed)
        var objects: [IngestedObject] = []
        for upload in try Recordings.uploads(scenario) {
            for changeset in try upload.changesets() {
                let result = try ingestor.ingest(changeset.data)
                #expect(result.rejected.isEmpty)
                objects.append(contentsOf: result.objects)
            }
        }
        return (objects, ingestor.schema)
    }

    @Test("each scenario's documents equal expected.jsonl, document by document", arguments: Recordings.scenarios)
    func documentsMatchExpected(scenario: String) throws {
        var (objects, _) = try Self.ingest(scenario)
        if scenario == "reconnect" {
            // Both sessions sent the same changesets; the sink stores each _id once.
            var seen: Set<BSON> = []
            objects = objects.filter { seen.insert($0.document["_id"] ?? .null).inserted }
        }
        let expected = try Recordings.expectedDocuments(scenario)
        #expect(objects.count == expected.count)
        for (object, document) in zip(objects, expected) {
            #expect(object.className == "SensorReading")
            let got = Recordings.sortedKeys(object.document)
            let want = Recordings.sortedKeys(document)
            #expect(got.keys == want.keys)
            for (key, value) in want {
                #expect(got[key] == value, "\(scenario) \(document["_id"] ?? .null).\(key)")
            }
        }
    }

    @Test("the reconnect scenario's second session yields the first one's objects again")
    func reconnectYieldsTheSameObjects() throws {
        let (objects, _) = try Self.ingest("reconnect")
        #expect(objects.count == 6)
        #expect(Array(objects[0..<3]) == Array(objects[3..<6]))
    }

    @Test("the derived schema is the recorded SensorReading and Location")
    func derivedSchema() throws {
        let (_, schema) = try Self.ingest("basic")
        #expect(schema.classNames == ["Location", "SensorReading"])
        let location = try #require(schema["Location"])
        #expect(location.kind == .embedded)
        #expect(
            location.properties == [
                Property(name: "lat", type: .double), Property(name: "lon", type: .double),
                Property(name: "label", type: .string, isOptional: true),
            ])
        let reading = try #require(schema["SensorReading"])
        #expect(reading.kind == .asymmetric)
        #expect(reading.primaryKey == "_id")
        let types = reading.properties.map { "\($0.name):\($0.typeDescription)" }
        #expect(
            types == [
                "_id:objectId", "deviceId:string", "seq:int", "ok:bool", "temperature:float", "pressure:double",
                "price:decimal128", "takenAt:date", "runId:uuid", "raw:data", "note:string?", "count:int?",
                "tags:List<string>", "samples:List<int>", "labels:List<string>", "attrs:Map<String, string?>",
                "extra:mixed?", "location:Location?", "route:List<Location>",
            ])
        #expect(schema.structuralErrors(synced: true).isEmpty)
    }

    @Test("every document is valid against the derived schema, and the field order is the schema's", arguments: Recordings.scenarios)
    func documentsValidate(scenario: String) throws {
        let (objects, schema) = try Self.ingest(scenario)
        let names = try #require(schema["SensorReading"]).properties.map(\.name)
        for object in objects {
            #expect(schema.validate(object.document, against: object.className).isEmpty)
            #expect(object.document.keys == names)
        }
    }

    @Test("with the schema fixed in advance the same documents come out", arguments: Recordings.scenarios)
    func fixedSchema(scenario: String) throws {
        let (learned, schema) = try Self.ingest(scenario)
        let (fixed, same) = try Self.ingest(scenario, schema: schema)
        #expect(fixed == learned)
        #expect(same == schema)
    }
}

extension Schema {
    /// A schema with no classes.
    static var empty: Schema { try! Schema([]) }
}
