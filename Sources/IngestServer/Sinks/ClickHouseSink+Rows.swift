import IngestCore

/// How one property is stored in a ClickHouse column (ClickHouse 18.16 and
/// later: no DateTime64, so dates are milliseconds in Int64).
enum ClickHouseColumnForm: String, Equatable, Sendable {
    /// bool: 0 or 1.
    case uint8 = "UInt8"
    /// int; date (milliseconds since 1970, UTC).
    case int64 = "Int64"
    case float32 = "Float32"
    case float64 = "Float64"
    /// string; decimal128 (its decimal text); data (raw bytes); embedded
    /// objects, lists, maps and mixed values (relaxed Extended JSON).
    case string = "String"
    /// ObjectId: its 12 bytes, which sort by creation time.
    case objectId = "FixedString(12)"
    case uuid = "UUID"

    /// Whether the column holds Extended JSON text.
    var isJSON: Bool { self == .string }

    init(_ property: Property) {
        guard property.collection == .single else {
            self = .string
            return
        }
        switch property.type {
        case .bool: self = .uint8
        case .int, .date: self = .int64
        case .float: self = .float32
        case .double: self = .float64
        case .string, .decimal128, .data, .mixed, .object: self = .string
        case .objectId: self = .objectId
        case .uuid: self = .uuid
        }
    }

    static func forPrimaryKey(_ property: Property?) -> ClickHouseColumnForm {
        property.map(ClickHouseColumnForm.init) ?? .objectId
    }
}

/// One object's `_id` as the duplicate check compares it: ObjectIds and
/// integers by value, string keys by their UTF-8 bytes, UUID keys by their
/// text (what `toString(_id)` prints), all without building Strings.
enum ClickHouseKey: Hashable {
    case objectId(UInt64, UInt32)
    case integer(Int64)
    case bytes([UInt8])

    /// The key a line of the duplicate check's answer names (the answer of
    /// ``ClickHouseRowBinary/keyOutput(_:)``), or nil if it cannot be read.
    init?(answer line: ArraySlice<UInt8>, form: ClickHouseColumnForm) {
        switch form {
        case .objectId:
            guard line.count == 24, let bytes = Self.unhex(line) else { return nil }
            var high: UInt64 = 0
            for byte in bytes[0..<8] { high = high << 8 | UInt64(byte) }
            var low: UInt32 = 0
            for byte in bytes[8..<12] { low = low << 8 | UInt32(byte) }
            self = .objectId(high, low)
        case .int64:
            guard let number = Int64(String(decoding: line, as: UTF8.self)) else { return nil }
            self = .integer(number)
        case .string:
            guard let bytes = Self.unhex(line) else { return nil }
            self = .bytes(bytes)
        default:
            self = .bytes(Array(line))
        }
    }

    private static func unhex(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x41...0x46: byte - 0x41 + 10
            case 0x61...0x66: byte - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}

/// Encodes rows in ClickHouse's RowBinary format straight from the objects'
/// BSON bytes (no document is built): per column in the table's order,
/// `Nullable` columns a flag byte (1: NULL) before the value; integers and
/// floats little-endian; `String` a LEB128 length and the bytes;
/// `FixedString(12)` the 12 bytes; `UUID` the 16 bytes as ClickHouse 18.16
/// reads them: two little-endian 64-bit halves, the first eight bytes first
/// (pinned by `ClickHouseSinkTests.lostReceipt`, which reads the text back).
enum ClickHouseRowBinary {
    /// Appends the row of upload object `index`, whose BSON is `raw`, to
    /// `group`: the row, its end, the index, its `_id`'s key and the key's
    /// TabSeparated line. `slots` is scratch space (one per column), reused
    /// across calls.
    ///
    /// Of equal keys the first field wins (as `document[name]` finds it);
    /// fields that are not columns are ignored; missing columns are NULL.
    static func appendRow(
        _ raw: UnsafeRawBufferPointer, to group: inout ClickHouseSink.Group, slots: inout [BSONElement?],
        object index: Int, fields: (SinkFields, propertyOfColumn: [Int])? = nil
    ) throws(ClickHouseError) {
        let columns = group.table.columns
        let collection = group.table.name
        do {
            // Where the schema check found the fields, else a walk.
            if !(fields.map { $0.0.collect(raw, propertyOfColumn: $0.propertyOfColumn, into: &slots) } ?? false) {
                try group.table.keys.collect(raw, into: &slots)
            }
        } catch let error as BSONError {
            throw ClickHouseError(.usage, "object \(index) of \(collection) is not a valid BSON document: \(error.message)")
        } catch {
            throw ClickHouseError(.usage, "object \(index) of \(collection) cannot be read: \(error)")
        }
        for (position, column) in columns.enumerated() {
            do throws(ClickHouseError) {
                try append(slots[position], form: column.form, json: column.json, nullable: position > 0, to: &group.rows)
            } catch {
                throw ClickHouseError(.usage, "object \(index) of \(collection), property \(column.name): \(error.message)")
            }
        }
        group.rowEnds.append(group.rows.count)
        group.indices.append(index)
        group.keys.append(appendKey(slots[0], form: columns[0].form, to: &group.keyRows))
    }

    /// Appends one field. `nil`, BSON null and undefined are NULL (refused
    /// for the non-nullable `_id`).
    static func append(
        _ element: BSONElement?, form: ClickHouseColumnForm, json: Bool, nullable: Bool,
        to out: inout [UInt8]
    ) throws(ClickHouseError) {
        guard let element, element.type != .null, element.type != .undefined else {
            guard nullable else { throw ClickHouseError(.usage, "the primary key has no value") }
            out.append(1)
            return
        }
        if nullable { out.append(0) }
        if json {
            let text: String
            do { text = try element.value().extendedJSON(.relaxed) } catch {
                throw ClickHouseError(.usage, "the value cannot be read: \(error.message)")
            }
            appendString(text.utf8, to: &out)
            return
        }
        switch (form, element.type) {
        case (.uint8, .bool): out.append(element.bool == true ? 1 : 0)
        case (.int64, .int32), (.int64, .int64): appendInteger(element.integer ?? 0, to: &out)
        case (.int64, .datetime): appendInteger(element.datetime ?? 0, to: &out)
        case (.float32, .double): appendInteger(Float(element.double ?? 0).bitPattern, to: &out)
        case (.float32, .int32), (.float32, .int64): appendInteger(Float(element.integer ?? 0).bitPattern, to: &out)
        case (.float64, .double): appendInteger((element.double ?? 0).bitPattern, to: &out)
        case (.float64, .int32), (.float64, .int64): appendInteger(Double(element.integer ?? 0).bitPattern, to: &out)
        case (.string, .string): appendString(element.stringBytes ?? UnsafeRawBufferPointer(start: nil, count: 0), to: &out)
        case (.string, .decimal128): appendString((element.decimal128?.description ?? "").utf8, to: &out)
        case (.string, .binary): appendString(element.binaryPayload ?? UnsafeRawBufferPointer(start: nil, count: 0), to: &out)
        case (.objectId, .objectId): out.append(contentsOf: element.objectIdBytes ?? UnsafeRawBufferPointer(start: nil, count: 0))
        case (.uuid, .binary) where element.binaryPayload?.count == 16:
            let bytes = element.binaryPayload!
            for offset in (0..<8).reversed() { out.append(bytes[offset]) }
            for offset in (8..<16).reversed() { out.append(bytes[offset]) }
        default:
            let name = (try? element.value().typeName) ?? "\(element.type)"
            throw ClickHouseError(.usage, "a \(name) value cannot be stored in a \(form.rawValue) column")
        }
    }

    /// The duplicate check's key of an `_id`, with its TabSeparated line (the
    /// external table's column is ``keyType(_:)``) appended to `keyRows`:
    /// the escaped bytes for FixedString and String keys, the text of Int64
    /// and UUID keys. Nil (and nothing appended) for an `_id` of another type.
    static func appendKey(_ element: BSONElement?, form: ClickHouseColumnForm, to keyRows: inout [UInt8]) -> ClickHouseKey? {
        guard let element else { return nil }
        let key: ClickHouseKey
        switch (form, element.type) {
        case (.objectId, .objectId):
            guard let bytes = element.objectIdBytes else { return nil }
            appendEscaped(bytes, to: &keyRows)
            let id = bytes.loadUnaligned(as: UInt64.self)
            let tail = bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
            key = .objectId(UInt64(bigEndian: id), UInt32(bigEndian: tail))
        case (.string, .string):
            guard let bytes = element.stringBytes else { return nil }
            appendEscaped(bytes, to: &keyRows)
            key = .bytes(Array(bytes))
        case (.int64, .int32), (.int64, .int64):
            let number = element.integer ?? 0
            keyRows.append(contentsOf: String(number).utf8)
            key = .integer(number)
        case (.uuid, .binary) where element.binaryPayload?.count == 16:
            let text = uuidText(element.binaryPayload!)
            keyRows.append(contentsOf: text)
            key = .bytes(text)
        default:
            return nil
        }
        keyRows.append(0x0A)
        return key
    }

    /// The external table's column type for keys of `form`.
    static func keyType(_ form: ClickHouseColumnForm) -> String {
        switch form {
        case .objectId: "FixedString(12)"
        case .int64: "Int64"
        default: "String"
        }
    }

    /// What the duplicate check selects for keys of `form`, read back by
    /// ``ClickHouseKey/init(answer:form:)``: upper-case hex of the bytes of
    /// FixedString and String keys (`toString` would cut a FixedString's
    /// trailing zero bytes, and strings may hold tabs and newlines), the text
    /// of Int64 and UUID keys.
    static func keyOutput(_ form: ClickHouseColumnForm, column: String) -> String {
        form == .objectId || form == .string ? "hex(\(column))" : "toString(\(column))"
    }

    /// How the duplicate check compares `column` with the external table's keys
    /// (18.16 refuses toUUID(…) in IN: UUID keys compare as text).
    static func keyExpression(_ form: ClickHouseColumnForm, column: String) -> String {
        form == .uuid ? "toString(\(column))" : column
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower case, as ClickHouse prints a UUID.
    static func uuidText(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { out.append(0x2D) }
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0xF)])
        }
        return out
    }

    @inline(__always)
    private static func appendInteger<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func appendString<Bytes: Collection>(_ bytes: Bytes, to out: inout [UInt8]) where Bytes.Element == UInt8 {
        var length = UInt64(bytes.count)
        while length >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: length) | 0x80)
            length >>= 7
        }
        out.append(UInt8(length))
        out.append(contentsOf: bytes)
    }

    /// TabSeparated escapes: backslash, tab, newline, CR and NUL.
    private static func appendEscaped(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        for byte in bytes {
            switch byte {
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x09: out.append(0x5C); out.append(0x74)
            case 0x0A: out.append(0x5C); out.append(0x6E)
            case 0x0D: out.append(0x5C); out.append(0x72)
            case 0x00: out.append(0x5C); out.append(0x30)
            default: out.append(byte)
            }
        }
    }
}
