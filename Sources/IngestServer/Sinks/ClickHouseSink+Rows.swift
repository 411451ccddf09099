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

/// Encodes rows in ClickHouse's TabSeparated format: `\N` for NULL, backslash
/// escapes for backslash, tab, newline, CR and NUL; other bytes as they are
/// (so FixedString and String columns take raw bytes).
enum ClickHouseTSV {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends one field of `property` (nil: the schema's `_id` or a property
    /// with no schema entry, encoded by `form`).
    static func append(_ value: BSON?, form: ClickHouseColumnForm, json: Bool, to out: inout [UInt8]) throws(ClickHouseError) {
        guard let value else { out.append(contentsOf: [0x5C, 0x4E]); return }
        switch value {
        case .null, .undefined:
            out.append(contentsOf: [0x5C, 0x4E])
            return
        default: break
        }
        if json {
            appendEscaped(Array(value.extendedJSON(.relaxed).utf8), to: &out)
            return
        }
        switch (form, value) {
        case (.uint8, .bool(let flag)): out.append(flag ? 0x31 : 0x30)
        case (.int64, .int32(let number)): out.append(contentsOf: String(number).utf8)
        case (.int64, .int64(let number)): out.append(contentsOf: String(number).utf8)
        case (.int64, .datetime(let millis)): out.append(contentsOf: String(millis).utf8)
        case (.float32, .double(let number)), (.float64, .double(let number)):
            if number.isNaN { out.append(contentsOf: "nan".utf8) }
            else if number.isInfinite { out.append(contentsOf: (number < 0 ? "-inf" : "inf").utf8) }
            else { out.append(contentsOf: number.description.utf8) }
        case (.float32, .int32(let number)), (.float64, .int32(let number)): out.append(contentsOf: String(number).utf8)
        case (.float32, .int64(let number)), (.float64, .int64(let number)): out.append(contentsOf: String(number).utf8)
        case (.string, .string(let text)): appendEscaped(Array(text.utf8), to: &out)
        case (.string, .decimal128(let decimal)): out.append(contentsOf: decimal.description.utf8)
        case (.string, .binary(let binary)): appendEscaped(binary.bytes, to: &out)
        case (.objectId, .objectId(let id)): appendEscaped(id.bytes, to: &out)
        case (.uuid, .binary(let binary)) where binary.bytes.count == 16:
            for (index, byte) in binary.bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { out.append(0x2D) }
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            }
        default:
            throw ClickHouseError(.usage, "a \(value.typeName) value cannot be stored in a \(form.rawValue) column")
        }
    }

    /// The `_id` as one TabSeparated field of the duplicate check's external
    /// table (its column type is ``keyType(_:)``): the escaped bytes for
    /// FixedString and String keys, the text of Int64 and UUID keys.
    static func keyField(_ value: BSON?, form: ClickHouseColumnForm) -> [UInt8]? {
        var out: [UInt8] = []
        switch (form, value) {
        case (.objectId, .objectId(let id)?): appendEscaped(id.bytes, to: &out)
        case (.string, .string(let text)?): appendEscaped(Array(text.utf8), to: &out)
        case (.int64, .int32(let number)?): out.append(contentsOf: String(number).utf8)
        case (.int64, .int64(let number)?): out.append(contentsOf: String(number).utf8)
        case (.uuid, .binary(let binary)?) where binary.bytes.count == 16:
            // 18.16 refuses toUUID(…) in IN: the sink compares toString(_id) for UUID keys.
            try? append(.binary(binary), form: .uuid, json: false, to: &out)
        default: return nil
        }
        return out
    }

    /// The external table's column type for keys of `form`.
    static func keyType(_ form: ClickHouseColumnForm) -> String {
        switch form {
        case .objectId: "FixedString(12)"
        case .int64: "Int64"
        default: "String"
        }
    }

    /// The `_id` as the duplicate check prints it: upper-case hex of the
    /// stored bytes (`hex(_id)` for FixedString, String) or of the text form
    /// (`hex(toString(_id))` for Int64, UUID).
    static func keyHex(_ value: BSON?, form: ClickHouseColumnForm) -> String? {
        let bytes: [UInt8]
        switch (form, value) {
        case (.objectId, .objectId(let id)?): bytes = id.bytes
        case (.string, .string(let text)?): bytes = Array(text.utf8)
        case (.int64, .int32(let number)?): bytes = Array(String(number).utf8)
        case (.int64, .int64(let number)?): bytes = Array(String(number).utf8)
        case (.uuid, .binary(let binary)?) where binary.bytes.count == 16:
            var text: [UInt8] = []
            try? append(.binary(binary), form: .uuid, json: false, to: &text)
            bytes = text
        default: return nil
        }
        let upper = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in bytes { out.append(upper[Int(byte >> 4)]); out.append(upper[Int(byte & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendEscaped(_ bytes: [UInt8], to out: inout [UInt8]) {
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
