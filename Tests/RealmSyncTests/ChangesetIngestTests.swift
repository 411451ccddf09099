import Foundation
import IngestCore
import Testing

@testable import RealmSync

@Suite("Changesets become documents")
struct ChangesetIngestTests {
    static let id = ObjectId(bytes: Array(1...12))
    static let other = ObjectId(bytes: Array(21...32))

    static let schema: Schema = {
        let reading = ObjectSchema(
            className: "Reading", kind: .asymmetric,
            properties: [
                Property(name: "_id", type: .objectId, isPrimaryKey: true),
                Property(name: "n", type: .int),
                Property(name: "name", type: .string, isOptional: true),
                Property(name: "tags", type: .string, collection: .list),
                Property(name: "labels", type: .string, collection: .list),
                Property(name: "attrs", type: .string, isOptional: true, collection: .map),
                Property(name: "extra", type: .mixed, isOptional: true),
                Property(name: "location", type: .object, isOptional: true, objectClassName: "Location"),
                Property(name: "route", type: .object, collection: .list, objectClassName: "Location"),
                Property(name: "station", type: .object, isOptional: true, objectClassName: "Station"),
                Property(name: "when", type: .date, isOptional: true),
                Property(name: "ratio", type: .float, isOptional: true),
            ])
        let location = ObjectSchema(
            className: "Location", kind: .embedded,
            properties: [
                Property(name: "lat", type: .double), Property(name: "lon", type: .double),
                Property(name: "label", type: .string, isOptional: true),
            ])
        let station = ObjectSchema(
            className: "Station", kind: .topLevel,
            properties: [
                Property(name: "_id", type: .string, isPrimaryKey: true)
            ])
        return try! Schema([reading, location, station])
    }()

    static func at(_ field: String, _ path: [PathElement] = [], _ key: ObjectId = id) -> ObjectPath {
        ObjectPath(table: "Reading", object: .objectId(key), field: field, path: path)
    }

    static func ingest(_ instructions: [Instruction], limits: ChangesetIngestor.Limits = .init()) throws(RealmIngestError)
        -> ChangesetIngestResult
    {
        var ingestor = ChangesetIngestor(schema: schema, limits: limits)
        return try ingestor.ingest(ChangesetEncoder.encode(instructions))
    }

    static func failure(_ instructions: [Instruction]) -> RealmIngestError? {
        do {
            _ = try ingest(instructions)
            return nil
        } catch {
            return error
        }
    }

    @Test("lists, sets, dictionaries, mixed collections, embedded objects, links and defaults")
    func everyOperation() throws {
        let result = try Self.ingest([
            .createObject(table: "Reading", object: .objectId(Self.id)),
            .arrayInsert(Self.at("tags", [.index(0)]), value: .string("a"), priorSize: 0),
            .arrayInsert(Self.at("tags", [.index(1)]), value: .string("b"), priorSize: 1),
            .arrayInsert(Self.at("tags", [.index(2)]), value: .string("c"), priorSize: 2),
            .arrayMove(Self.at("tags", [.index(0)]), newIndex: 2, priorSize: 3),  // b c a
            .arrayErase(Self.at("tags", [.index(0)]), priorSize: 3),  // c a
            .update(Update(path: Self.at("tags", [.index(1)]), value: .string("z"), priorSize: 2)),  // c z
            .setInsert(Self.at("labels"), value: .string("x")),
            .setInsert(Self.at("labels"), value: .string("y")),
            .setInsert(Self.at("labels"), value: .string("x")),
            .setErase(Self.at("labels"), value: .string("y")),
            .update(Update(path: Self.at("attrs", [.key("unit")]), value: .string("F"))),
            .update(Update(path: Self.at("attrs", [.key("gone")]), value: .string("?"))),
            .update(Update(path: Self.at("attrs", [.key("site")]), value: .null)),
            .update(Update(path: Self.at("attrs", [.key("gone")]), value: .erased)),
            .update(Update(path: Self.at("extra"), value: .list)),
            .arrayInsert(Self.at("extra", [.index(0)]), value: .int(1), priorSize: 0),
            .arrayInsert(Self.at("extra", [.index(1)]), value: .dictionary, priorSize: 1),
            .update(Update(path: Self.at("extra", [.index(1), .key("k")]), value: .bool(true))),
            .update(Update(path: Self.at("location"), value: .objectValue)),
            .update(Update(path: Self.at("location", [.key("lat")]), value: .double(1.5))),
            .arrayInsert(Self.at("route", [.index(0)]), value: .objectValue, priorSize: 0),
            .update(Update(path: Self.at("route", [.index(0), .key("lon")]), value: .double(-2))),
            .update(Update(path: Self.at("station"), value: .link(table: "Station", key: .string("munich")))),
            .update(Update(path: Self.at("when"), value: .timestamp(seconds: -1, nanoseconds: -500_000))),
            .update(Update(path: Self.at("ratio"), value: .float(0.1))),
            .addInteger(Self.at("n"), value: 5),
            .addInteger(Self.at("n"), value: -7),
        ])
        #expect(result.rejected.isEmpty && !result.schemaChanged)
        let object = try #require(result.objects.first)
        #expect(object.className == "Reading" && object.primaryKey == .objectId(Self.id))
        let expected: BSONDocument = [
            "_id": .objectId(Self.id),
            "n": .int64(-2),
            "name": .null,
            "tags": .array(["c", "z"]),
            "labels": .array(["x"]),
            "attrs": .document(["site": .null, "unit": "F"]),  // keys sorted, as the SDK writes maps
            "extra": .array([.int64(1), .document(["k": true])]),
            // An embedded object created empty gets its optional fields as null;
            // a required one never set stays missing (the validator reports it).
            "location": .document(["lat": 1.5, "label": .null]),
            "route": .array([.document(["lon": -2.0, "label": .null])]),
            "station": "munich",
            "when": .datetime(-1001),  // -1.0005 s, rounded down to whole milliseconds
            "ratio": .double(Double(Float(0.1))),
        ]
        #expect(object.document == expected)
        let violations = Self.schema.validate(object.document, against: "Reading")
        #expect(violations.map(\.path) == ["location.lon", "route[0].lat"])
    }

    @Test("an object with nothing set: null optionals, empty collections, the required int left out")
    func defaults() throws {
        let result = try Self.ingest([.createObject(table: "Reading", object: .objectId(Self.id))])
        #expect(
            result.objects.first?.document == [
                "_id": .objectId(Self.id), "name": .null, "tags": .array([]), "labels": .array([]), "attrs": .document([:]),
                "extra": .null, "location": .null, "route": .array([]), "station": .null, "when": .null, "ratio": .null,
            ])
    }

    @Test("objects keep their creation order; an erased one is gone; a repeated create changes nothing")
    func objectsInOrder() throws {
        let result = try Self.ingest([
            .createObject(table: "Reading", object: .objectId(Self.other)),
            .createObject(table: "Reading", object: .objectId(Self.id)),
            .update(Update(path: Self.at("name", [], Self.other), value: .string("first"))),
            .createObject(table: "Reading", object: .objectId(Self.other)),
            .createObject(table: "Reading", object: .objectId(ObjectId(bytes: [UInt8](repeating: 9, count: 12)))),
            .eraseObject(table: "Reading", object: .objectId(ObjectId(bytes: [UInt8](repeating: 9, count: 12)))),
            .eraseObject(table: "Reading", object: .objectId(ObjectId(bytes: [UInt8](repeating: 7, count: 12)))),
        ])
        #expect(result.objects.map(\.primaryKey) == [.objectId(Self.other), .objectId(Self.id)])
        #expect(result.objects.first?.document["name"] == "first")
    }

    @Test("writes to a class that is not asymmetric are refused: asymmetric data only")
    func notAsymmetric() {
        for instruction: Instruction in [
            .createObject(table: "Station", object: .string("munich")),
            .eraseObject(table: "Station", object: .string("munich")),
            .update(Update(path: ObjectPath(table: "Station", object: .string("munich"), field: "x"), value: .int(1))),
        ] {
            let error = Self.failure([instruction])
            #expect(error?.code == .notAsymmetric)
            #expect(error?.table == "Station")
            #expect(error?.message.contains("asymmetric data only") == true)
            #expect(error?.syncCode == .writeNotAllowed)
        }
    }

    static let invalid: [(String, [Instruction], RealmIngestError.Code)] = [
        ("an object not created in the changeset", [.update(Update(path: at("name"), value: .null))], .invalidInstruction),
        ("an unknown class", [.createObject(table: "Nope", object: .int(1))], .invalidSchemaChange),
        ("an embedded class created directly", [.createObject(table: "Location", object: .null)], .invalidInstruction),
        ("a GlobalKey object", [.createObject(table: "Reading", object: .globalKey(high: 1, low: 2))], .invalidInstruction),
        (
            "a prior size that does not match",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .arrayInsert(at("tags", [.index(0)]), value: .string("a"), priorSize: 1),
            ], .invalidInstruction
        ),
        (
            "an insert beyond the end",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .arrayInsert(at("tags", [.index(1)]), value: .string("a"), priorSize: 0),
            ], .invalidInstruction
        ),
        (
            "an erase beyond the end",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .arrayErase(at("tags", [.index(0)]), priorSize: 0),
            ], .invalidInstruction
        ),
        (
            "a move beyond the end",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .arrayInsert(at("tags", [.index(0)]), value: .string("a"), priorSize: 0),
                .arrayMove(at("tags", [.index(0)]), newIndex: 1, priorSize: 1),
            ], .invalidInstruction
        ),
        (
            "an update of the primary key",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("_id"), value: .objectId(other))),
            ], .invalidInstruction
        ),
        (
            "an embedded object in a string field",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("name"), value: .objectValue)),
            ], .invalidInstruction
        ),
        (
            "a path into a value never set",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("location", [.key("lat")]), value: .double(1))),
            ], .invalidInstruction
        ),
        (
            "a path through a scalar",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("name"), value: .string("x"))),
                .update(Update(path: at("name", [.key("k")]), value: .double(1))),
            ], .invalidInstruction
        ),
        (
            "Erased on a field",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("name"), value: .erased)),
            ], .invalidInstruction
        ),
        (
            "AddInteger on a string",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("name"), value: .string("x"))), .addInteger(at("name"), value: 1),
            ], .invalidInstruction
        ),
        (
            "Clear on a scalar",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .update(Update(path: at("name"), value: .string("x"))), .clear(at("name"), collection: .list),
            ], .invalidInstruction
        ),
        (
            "a set instruction on a dictionary",
            [
                .createObject(table: "Reading", object: .objectId(id)),
                .setInsert(at("attrs"), value: .string("x")),
            ], .invalidInstruction
        ),
        ("an erased table", [.eraseTable(table: "Reading")], .invalidSchemaChange),
        ("an erased column", [.eraseColumn(table: "Reading", field: "n")], .invalidSchemaChange),
    ]

    @Test("instructions that cannot apply are errors", arguments: 0..<invalid.count)
    func invalidInstructions(index: Int) {
        let (name, instructions, code) = Self.invalid[index]
        #expect(Self.failure(instructions)?.code == code, "\(name)")
    }

    @Test("a changeset that does not decode is badChangeset with the decoder's error")
    func undecodable() {
        var ingestor = ChangesetIngestor(schema: Self.schema)
        do {
            _ = try ingestor.ingest([0x3F, 0, 5])
            Issue.record("decoded")
        } catch {
            #expect(error.code == .badChangeset && error.syncCode == .badChangeset)
            #expect(error.changesetError?.code == .truncated)
        }
    }

    @Test("the value budget bounds what a changeset may build, defaults included")
    func valueLimit() {
        var instructions: [Instruction] = [.createObject(table: "Reading", object: .objectId(Self.id))]
        for index in 0..<100 {
            instructions.append(.arrayInsert(Self.at("route", [.index(UInt32(index))]), value: .objectValue, priorSize: UInt32(index)))
        }
        #expect(throws: RealmIngestError.self) { try Self.ingest(instructions, limits: .init(maxValues: 150)) }
        #expect(throws: Never.self) { try Self.ingest(instructions, limits: .init(maxValues: 1000)) }
        do { _ = try Self.ingest(instructions, limits: .init(maxValues: 150)) } catch { #expect(error.code == .limitExceeded) }
    }

    @Test("a date beyond BSON's range rejects its object, not the changeset")
    func dateOutOfRange() throws {
        let result = try Self.ingest([
            .createObject(table: "Reading", object: .objectId(Self.id)),
            .update(Update(path: Self.at("when"), value: .timestamp(seconds: Int64.max / 10, nanoseconds: 0))),
            .createObject(table: "Reading", object: .objectId(Self.other)),
        ])
        #expect(result.objects.map(\.primaryKey) == [.objectId(Self.other)])
        #expect(result.rejected.map(\.primaryKey) == [.objectId(Self.id)])
        #expect(result.rejected.first?.reason.contains("when") == true)
    }

    @Test("schema declarations: the same again is fine, a different one or an unknown one is refused in fixed mode")
    func fixedSchema() throws {
        let same: [Instruction] = [
            .addTable(AddTable(table: "Reading", type: .asymmetric, primaryKey: .init(field: "_id", type: .objectId, isNullable: false))),
            .addColumn(AddColumn(table: "Reading", field: "n", type: .int, isNullable: false)),
            .addColumn(AddColumn(table: "Reading", field: "labels", type: .string, isNullable: false, collection: .set)),
            .addColumn(AddColumn(table: "Reading", field: "location", type: .link, isNullable: true, linkTarget: "Location")),
        ]
        #expect(try Self.ingest(same).schemaChanged == false)
        let conflicts: [Instruction] = [
            .addTable(AddTable(table: "Reading", type: .topLevel, primaryKey: .init(field: "_id", type: .objectId, isNullable: false))),
            .addTable(AddTable(table: "Reading", type: .asymmetric, primaryKey: .init(field: "_id", type: .string, isNullable: false))),
            .addColumn(AddColumn(table: "Reading", field: "n", type: .double, isNullable: false)),
            .addColumn(AddColumn(table: "Reading", field: "n", type: .int, isNullable: true)),
            .addColumn(AddColumn(table: "Reading", field: "tags", type: .string, isNullable: false)),
            .addColumn(AddColumn(table: "Reading", field: "new", type: .int, isNullable: false)),
            .addTable(AddTable(table: "New", type: .asymmetric, primaryKey: .init(field: "_id", type: .objectId, isNullable: false))),
            .addColumn(AddColumn(table: "Nowhere", field: "n", type: .int, isNullable: false)),
            .addColumn(AddColumn(table: "Reading", field: "weird", type: .int, isNullable: false, collection: .dictionary, keyType: .int)),
        ]
        for conflict in conflicts {
            #expect(Self.failure([conflict])?.syncCode == .invalidSchemaChange, "\(conflict)")
        }
    }

    @Test("development mode learns new classes and columns, and uses them in the same changeset")
    func developmentMode() throws {
        var ingestor = ChangesetIngestor(schema: Self.schema, schemaMode: .development)
        let result = try ingestor.ingest(
            ChangesetEncoder.encode([
                .addColumn(AddColumn(table: "Reading", field: "level", type: .decimal, isNullable: true)),
                .addTable(AddTable(table: "Event", type: .asymmetric, primaryKey: .init(field: "_id", type: .uuid, isNullable: false))),
                .addColumn(AddColumn(table: "Event", field: "payload", type: .binary, isNullable: false)),
                .createObject(table: "Event", object: .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))),
                .update(
                    Update(
                        path: ObjectPath(
                            table: "Event", object: .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))),
                            field: "payload"), value: .binary([7]))),
            ]))
        #expect(result.schemaChanged)
        // Declaring the same again (a second client file) changes nothing.
        let again = try ingestor.ingest(
            ChangesetEncoder.encode([
                .addColumn(AddColumn(table: "Reading", field: "level", type: .decimal, isNullable: true))
            ]))
        #expect(!again.schemaChanged)
        #expect(ingestor.schema["Reading"]?[property: "level"] == Property(name: "level", type: .decimal128, isOptional: true))
        #expect(ingestor.schema["Event"]?.kind == .asymmetric)
        #expect(
            result.objects.first?.document == [
                "_id": .binary(BSONBinary(subtype: 4, bytes: Array(1...16))),
                "payload": .binary(BSONBinary(subtype: 0, bytes: [7])),
            ])
    }

    @Test("fields the schema does not know are kept, after the known ones, for the validator to report")
    func unknownFields() throws {
        let result = try Self.ingest([
            .createObject(table: "Reading", object: .objectId(Self.id)),
            .update(Update(path: Self.at("surprise"), value: .objectValue)),
            .update(Update(path: Self.at("surprise", [.key("k")]), value: .int(3))),
            .update(Update(path: Self.at("n"), value: .int(1))),
        ])
        let document = try #require(result.objects.first?.document)
        #expect(document.keys.last == "surprise")
        #expect(document["surprise"] == .document(["k": .int64(3)]))
        #expect(Self.schema.validate(document, against: "Reading").map(\.code) == [.unknownField])
    }
}
