import Foundation
import IngestCore
import Testing

@testable import RealmSync

@Suite("Changesets")
struct ChangesetTests {
    static let id = ObjectId(bytes: Array(1...12))
    static let uuid = UUID(uuidString: "3b241101-e2bb-4255-8caf-4136c566a962")!
    static func path(_ field: String, _ elements: [PathElement] = [], key: PrimaryKey = .objectId(id)) -> ObjectPath {
        ObjectPath(table: "SensorReading", object: key, field: field, path: elements)
    }

    static let payloads: [Payload] = [
        .set, .list, .erased, .dictionary, .objectValue, .null, .int(0), .int(-1), .int(63), .int(64), .int(-64), .int(-65),
        .int(Int64.max), .int(Int64.min), .bool(true), .bool(false), .string(""), .string("héllo"),
        .string(String(repeating: "x", count: 300)), .binary([]), .binary([0, 1, 0xFF]),
        .timestamp(seconds: 1_764_400_000, nanoseconds: 123_000_000), .timestamp(seconds: -5, nanoseconds: -999_999_999),
        .timestamp(seconds: 0, nanoseconds: 0), .float(60.5), .float(-Float.greatestFiniteMagnitude), .double(29.65),
        .double(-0.0), .double(.infinity), .decimal(try! Decimal128(parsing: "0.99")), .decimal(try! Decimal128(parsing: "-1.5E+300")),
        .decimal(try! Decimal128(parsing: "9999999999999999999999999999999999")), .decimal(Decimal128.zero), .decimal(.nan),
        .decimal(.negativeInfinity), .link(table: "Station", key: .string("munich")), .link(table: "Station", key: .int(4)),
        .link(table: "Station", key: .null), .objectId(id), .uuid(uuid),
    ]

    @Test("every payload type round-trips", arguments: 0..<payloads.count)
    func payloadRoundTrip(index: Int) throws {
        let value = Self.payloads[index]
        let instructions: [Instruction] = [
            .update(Update(path: Self.path("field"), value: value, isDefault: index % 2 == 0)),
            .update(Update(path: Self.path("list", [.index(3)]), value: value, priorSize: 5)),
            .arrayInsert(Self.path("list", [.key("k"), .index(0)]), value: value, priorSize: 0),
            .setInsert(Self.path("set"), value: value),
            .setErase(Self.path("set"), value: value),
        ]
        let bytes = ChangesetEncoder.encode(instructions)
        let decoded = try ChangesetDecoder.decodeAll(bytes).filter { if case .internString = $0 { false } else { true } }
        #expect(ChangesetEncoder.encode(decoded) == bytes)
        #expect(decoded.count == instructions.count)
        if case .decimal(let decimal) = value, decimal.isNaN { return }  // NaN equals nothing; the bytes matched
        #expect(decoded == instructions)
    }

    static let instructions: [Instruction] = [
        .addTable(AddTable(table: "SensorReading", type: .asymmetric, primaryKey: .init(field: "_id", type: .objectId, isNullable: false))),
        .addTable(AddTable(table: "Station", type: .topLevel, primaryKey: .init(field: "_id", type: .string, isNullable: true))),
        .addTable(AddTable(table: "Location", type: .embedded, primaryKey: nil)),
        .addTable(AddTable(table: "Keyed", type: .topLevel, primaryKey: .init(field: "key", type: .globalKey, isNullable: false))),
        .eraseTable(table: "Station"),
        .addColumn(AddColumn(table: "SensorReading", field: "tags", type: .string, isNullable: false, collection: .list)),
        .addColumn(
            AddColumn(table: "SensorReading", field: "attrs", type: .string, isNullable: true, collection: .dictionary, keyType: .string)),
        .addColumn(AddColumn(table: "SensorReading", field: "labels", type: .string, isNullable: false, collection: .set)),
        .addColumn(AddColumn(table: "SensorReading", field: "location", type: .link, isNullable: true, linkTarget: "Location")),
        .addColumn(AddColumn(table: "SensorReading", field: "extra", type: .null, isNullable: true)),
        .eraseColumn(table: "SensorReading", field: "extra"),
        .createObject(table: "SensorReading", object: .objectId(id)),
        .createObject(table: "Station", object: .string("munich")),
        .createObject(table: "Station", object: .int(-3)),
        .createObject(table: "Station", object: .null),
        .createObject(table: "Station", object: .uuid(uuid)),
        .createObject(table: "Keyed", object: .globalKey(high: 1, low: UInt64.max)),
        .eraseObject(table: "Station", object: .string("munich")),
        .addInteger(path("count"), value: -42),
        .arrayMove(path("tags", [.index(0)]), newIndex: 1, priorSize: 2),
        .arrayErase(path("tags", [.index(1)]), priorSize: 2),
        .clear(path("tags"), collection: .list),
        .clear(path("attrs"), collection: .dictionary),
        .update(Update(path: path("route", [.index(UInt32.max), .key("lat")]), value: .double(1), isDefault: true)),
    ]

    @Test("every instruction round-trips")
    func instructionsRoundTrip() throws {
        let bytes = ChangesetEncoder.encode(Self.instructions)
        let decoded = try ChangesetDecoder.decodeAll(bytes)
        let withoutInterning = decoded.filter { if case .internString = $0 { false } else { true } }
        #expect(withoutInterning == Self.instructions)
        #expect(ChangesetEncoder.encode(decoded) == bytes)
        // Strings are interned once each, in order of first use.
        let interned = decoded.compactMap { if case .internString(_, let string) = $0 { string } else { nil } }
        #expect(interned.first == "SensorReading" && Set(interned).count == interned.count)
    }

    @Test("the integer code: 7 bits per byte, then 6 bits and the sign")
    func integerCode() {
        func bytes(_ value: Int64) -> [UInt8] {
            var out: [UInt8] = []
            if value < 0 {
                ChangesetEncoder.appendInteger(magnitude: UInt64(bitPattern: ~value), negative: true, to: &out)
            } else {
                ChangesetEncoder.appendInteger(magnitude: UInt64(value), negative: false, to: &out)
            }
            return out
        }
        #expect(bytes(0) == [0x00])
        #expect(bytes(63) == [0x3F])
        #expect(bytes(64) == [0xC0, 0x00])
        #expect(bytes(-1) == [0x40])
        #expect(bytes(-2) == [0x41])
        #expect(bytes(300_000) == [0xE0, 0xA7, 0x12])
        #expect(bytes(Int64.max).count == 10)
        #expect(bytes(Int64.min).count == 10)
        #expect(bytes(Int64.min).last == 0x40)
    }

    static func error(_ bytes: [UInt8]) -> ChangesetError? {
        do {
            _ = try ChangesetDecoder.decodeAll(bytes)
            return nil
        } catch {
            return error
        }
    }

    static let hostile: [(String, [UInt8], ChangesetError.Code)] = [
        ("an unknown instruction", [14], .malformed),
        ("a huge instruction code", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], .malformed),
        ("an integer of 11 bytes", [0x3F] + [UInt8](repeating: 0x80, count: 10) + [0], .malformed),
        ("a truncated integer", [0x3F, 0x80], .truncated),
        ("an intern index out of order", [0x3F, 1, 0], .malformed),
        ("a string interned twice", [0x3F, 0, 1, 0x41, 0x3F, 1, 1, 0x41], .malformed),
        ("a string longer than the changeset", [0x3F, 0, 5, 0x41], .truncated),
        ("a huge string length", [0x3F, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], .limitExceeded),
        ("an interned string that is not UTF-8", [0x3F, 0, 1, 0xFF], .invalidUTF8),
        ("a name not interned", [1, 0], .malformed),
        ("a negative intern index", [0x3F, 0x40, 0], .malformed),
        ("an unknown table type", [0x3F, 0, 1, 0x41, 0, 0, 3], .malformed),
        ("a double primary key", [0x3F, 0, 1, 0x41, 0, 0, 2, 0, 7, 0], .malformed),
        ("a nullability of 2", [0x3F, 0, 1, 0x41, 0, 0, 2, 0, 10, 2], .malformed),
        ("an unknown value type", [0x3F, 0, 1, 0x41, 2, 0, 12], .malformed),
        ("a value type beyond 8 bits", [0x3F, 0, 1, 0x41, 2, 0, 0x81, 0x02], .malformed),
        ("a bool primary key", [0x3F, 0, 1, 0x41, 2, 0, 2, 1], .malformed),
        ("a truncated ObjectId", [0x3F, 0, 1, 0x41, 2, 0, 10, 1, 2, 3], .truncated),
        ("a GlobalKey value", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0, 0x40], .malformed),
        ("a path element -2", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 1, 0x41, 0], .malformed),
        ("a list index beyond 32 bits", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 0], .malformed),
        ("a path of 65 elements", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0xC1, 0x00], .limitExceeded),
        ("an ArrayInsert without an index", [0x3F, 0, 1, 0x41, 8, 0, 0, 0, 0, 0, 0], .malformed),
        ("timestamp nanoseconds of a second", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0, 5, 1, 0x80, 0x94, 0xEB, 0xDC, 0x03, 0], .malformed),
        ("timestamp signs that differ", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0, 5, 1, 0x41, 0], .malformed),
        ("a decimal of 18 bytes", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0, 8] + [UInt8](repeating: 0x81, count: 17) + [1, 0, 0, 0], .malformed),
        ("a decimal exponent out of range", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0, 8, 1, 0xC0, 0x80, 0x01, 0, 0], .malformed),
        ("an unknown collection type", [0x3F, 0, 1, 0x41, 11, 0, 0, 0, 0, 4], .malformed),
        ("a truncated float", [0x3F, 0, 1, 0x41, 4, 0, 0, 0, 0, 6, 1, 2], .truncated),
    ]

    @Test("hostile changesets are errors with an offset", arguments: 0..<hostile.count)
    func hostileChangesets(index: Int) {
        let (name, bytes, code) = Self.hostile[index]
        let error = Self.error(bytes)
        #expect(error?.code == code, "\(name): \(error.map { "\($0)" } ?? "decoded")")
        if let error { #expect(error.offset >= 0 && error.offset <= bytes.count) }
    }

    @Test("every recorded changeset cut at every byte is an error or a prefix, never a crash")
    func truncatedRecordedChangesets() throws {
        let changesets = try Recordings.uploads("basic").flatMap { try $0.changesets() }.map(\.data)
        for data in changesets.prefix(2) {
            let whole = try ChangesetDecoder.decodeAll(data)
            for cut in 0..<data.count {
                do {
                    let prefix = try ChangesetDecoder.decodeAll(Array(data[..<cut]))
                    // A cut between instructions decodes to the instructions before it.
                    #expect(prefix == Array(whole.prefix(prefix.count)))
                } catch {
                    #expect(error.offset <= cut)
                }
            }
        }
    }

    @Test("the streaming decoder gives the same instructions as decodeAll, with the interned strings")
    func streaming() throws {
        let data = try #require(try Recordings.uploads("basic").first?.changesets().first?.data)
        var decoder = ChangesetDecoder(data)
        var count = 0
        while try decoder.next() != nil { count += 1 }
        let all = try ChangesetDecoder.decodeAll(data)
        #expect(decoder.isAtEnd && count == all.count)
        // The schema changeset: tables first, and an empty string interned for
        // the link target of columns that are not links.
        #expect(decoder.internedStrings.prefix(2) == ["Location", "SensorReading"])
        #expect(decoder.internedStrings.contains(""))
    }
}
