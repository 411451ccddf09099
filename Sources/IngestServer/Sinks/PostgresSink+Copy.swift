#if canImport(Glibc)
import Glibc
#endif
import IngestCore

/// How one property is stored in a PostgreSQL column.
enum PostgresColumnForm: String, Equatable, Sendable {
    case boolean
    case bigint
    case real
    case double = "double precision"
    case text
    /// Decimal128: `numeric` keeps the digits and scale (`12.50`), NaN and ±Infinity.
    case numeric
    /// data and ObjectId (its 12 bytes: byte order is creation order).
    case bytea
    case uuid
    /// date: milliseconds since 1970 as `timestamptz` (UTC).
    case timestamptz
    /// Embedded objects, lists, maps and mixed values: relaxed Extended JSON.
    case jsonb

    init(_ property: Property) {
        guard property.collection == .single else {
            self = .jsonb
            return
        }
        switch property.type {
        case .bool: self = .boolean
        case .int: self = .bigint
        case .float: self = .real
        case .double: self = .double
        case .string: self = .text
        case .decimal128: self = .numeric
        case .data, .objectId: self = .bytea
        case .uuid: self = .uuid
        case .date: self = .timestamptz
        case .mixed, .object: self = .jsonb
        }
    }

    /// `_id`: its own type's form (ObjectId → bytea by default).
    static func forPrimaryKey(_ property: Property?) -> PostgresColumnForm {
        property.map(PostgresColumnForm.init) ?? .bytea
    }

    /// The SQL column type.
    var sqlType: String { rawValue }
}

/// Encodes rows in `COPY … FROM STDIN` text format: tab-separated columns,
/// `\N` for NULL, backslash escapes for backslash, tab, newline and CR.
enum PostgresCopyText {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends one field (without separator). Throws for a value the column
    /// cannot hold (a NUL character in text, a date outside PostgreSQL's range).
    static func append(_ value: BSON?, form: PostgresColumnForm, to out: inout [UInt8]) throws(PostgresError) {
        guard let value else {
            out.append(contentsOf: [0x5C, 0x4E])  // \N
            return
        }
        if case .null = value { out.append(contentsOf: [0x5C, 0x4E]); return }
        if case .undefined = value { out.append(contentsOf: [0x5C, 0x4E]); return }
        switch (form, value) {
        case (.jsonb, _):
            try appendEscaped(value.extendedJSON(.relaxed), to: &out)
        case (.boolean, .bool(let flag)):
            out.append(flag ? 0x74 : 0x66)  // t / f
        case (.bigint, .int32(let number)):
            out.append(contentsOf: String(number).utf8)
        case (.bigint, .int64(let number)):
            out.append(contentsOf: String(number).utf8)
        case (.real, .double(let number)), (.double, .double(let number)):
            appendDouble(number, to: &out)
        case (.real, .int32(let number)), (.double, .int32(let number)):
            out.append(contentsOf: String(number).utf8)
        case (.real, .int64(let number)), (.double, .int64(let number)):
            out.append(contentsOf: String(number).utf8)
        case (.text, .string(let text)):
            try appendEscaped(text, to: &out)
        case (.numeric, .decimal128(let decimal)):
            out.append(contentsOf: decimal.description.utf8)
        case (.bytea, .objectId(let id)):
            appendHexBytea(id.bytes, to: &out)
        case (.bytea, .binary(let binary)):
            appendHexBytea(binary.bytes, to: &out)
        case (.uuid, .binary(let binary)) where binary.bytes.count == 16:
            for (index, byte) in binary.bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { out.append(0x2D) }
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            }
        case (.timestamptz, .datetime(let millis)):
            try appendTimestamp(millis, to: &out)
        default:
            throw PostgresError(.usage, "a \(value.typeName) value cannot be stored in a \(form.sqlType) column")
        }
    }

    /// Appends the COPY row (columns tab-separated, then a newline) of the
    /// object whose BSON is `raw`, read straight from the bytes: the first
    /// field of each column's name (`keys` holds the column names in order),
    /// `\N` for a missing one. `slots` is scratch space reused across calls.
    static func appendRow(
        _ raw: UnsafeRawBufferPointer, columns: [(name: String, form: PostgresColumnForm)], keys: BSONKeyTable,
        slots: inout [BSONElement?], to out: inout [UInt8], object index: Int,
        collection: String, fields: (SinkFields, propertyOfColumn: [Int])? = nil
    ) throws(PostgresError) {
        try collectColumns(raw, keys: keys, slots: &slots, object: index, collection: collection, fields: fields)
        for (position, column) in columns.enumerated() {
            if position > 0 { out.append(0x09) }
            do throws(PostgresError) {
                try append(slots[position], form: column.form, to: &out)
            } catch {
                throw PostgresError(.usage, "object \(index) of \(collection), property \(column.name): \(error.message)")
            }
        }
        out.append(0x0A)
    }

    /// ``append(_:form:to:)`` of one element in place: the common scalar
    /// forms from the bytes, anything else through its decoded value.
    static func append(_ element: BSONElement?, form: PostgresColumnForm, to out: inout [UInt8]) throws(PostgresError) {
        guard let element else {
            out.append(contentsOf: [0x5C, 0x4E])  // \N
            return
        }
        switch (form, element.type) {
        case (.text, .string):
            if let bytes = element.stringBytes { try appendEscaped(bytes, to: &out) }
        case (.bigint, .int32), (.bigint, .int64):
            out.append(contentsOf: String(element.integer ?? 0).utf8)
        case (.double, .double), (.real, .double):
            appendDouble(element.double ?? 0, to: &out)
        case (.boolean, .bool):
            out.append(element.bool == true ? 0x74 : 0x66)  // t / f
        case (.bytea, .objectId):
            if let bytes = element.objectIdBytes { appendHexBytea(bytes, to: &out) }
        default:
            let value: BSON
            do { value = try element.value() } catch {
                throw PostgresError(.usage, "the value cannot be read: \(error.message)")
            }
            try append(value, form: form, to: &out)
        }
    }

    /// The text PostgreSQL prints for a stored `_id` of `form` (to match
    /// `RETURNING "_id"::text` against the uploaded objects).
    static func keyText(_ value: BSON?, form: PostgresColumnForm) -> String? {
        guard let value else { return nil }
        var out: [UInt8] = []
        if form == .bytea {
            // bytea's text output is \x + lower-case hex (not escaped as in COPY).
            let bytes: [UInt8]
            switch value {
            case .objectId(let id): bytes = id.bytes
            case .binary(let binary): bytes = binary.bytes
            default: return nil
            }
            out.append(contentsOf: [0x5C, 0x78])
            for byte in bytes { out.append(hexDigits[Int(byte >> 4)]); out.append(hexDigits[Int(byte & 0xF)]) }
            return String(decoding: out, as: UTF8.self)
        }
        if case .string(let text) = value, form == .text { return text }
        guard (try? append(value, form: form, to: &out)) != nil else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendHexBytea<Bytes: Sequence>(_ bytes: Bytes, to out: inout [UInt8]) where Bytes.Element == UInt8 {
        // \\x in COPY text is the escaped backslash of bytea's hex format.
        out.append(contentsOf: [0x5C, 0x5C, 0x78])
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0xF)])
        }
    }

    private static func appendDouble(_ number: Double, to out: inout [UInt8]) {
        if number.isNaN {
            out.append(contentsOf: "NaN".utf8)
        } else if number.isInfinite {
            out.append(contentsOf: (number < 0 ? "-Infinity" : "Infinity").utf8)
        } else {
            out.append(contentsOf: number.description.utf8)
        }  // shortest round-trip form
    }

    private static func appendEscaped(_ text: String, to out: inout [UInt8]) throws(PostgresError) {
        try appendEscaped(text.utf8, to: &out)
    }

    private static func appendEscaped<Bytes: Sequence>(_ bytes: Bytes, to out: inout [UInt8]) throws(PostgresError)
    where Bytes.Element == UInt8 {
        for byte in bytes {
            switch byte {
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x09: out.append(0x5C); out.append(0x74)
            case 0x0A: out.append(0x5C); out.append(0x6E)
            case 0x0D: out.append(0x5C); out.append(0x72)
            case 0x00:
                throw PostgresError(.usage, "PostgreSQL text cannot hold the NUL character (U+0000)")
            default: out.append(byte)
            }
        }
    }

    /// `YYYY-MM-DD HH:MM:SS.mmm+00` (UTC).
    private static func appendTimestamp(_ millis: Int64, to out: inout [UInt8]) throws(PostgresError) {
        let (parts, year, fraction) = try utcParts(millis)
        func pad(_ value: Int, _ width: Int) {
            let digits = String(value)
            if digits.count < width { out.append(contentsOf: Array(repeating: 0x30, count: width - digits.count)) }
            out.append(contentsOf: digits.utf8)
        }
        pad(year, 4); out.append(0x2D); pad(Int(parts.tm_mon) + 1, 2); out.append(0x2D); pad(Int(parts.tm_mday), 2)
        out.append(0x20)
        pad(Int(parts.tm_hour), 2); out.append(0x3A); pad(Int(parts.tm_min), 2); out.append(0x3A); pad(Int(parts.tm_sec), 2)
        out.append(0x2E); pad(Int(fraction), 3)
        out.append(contentsOf: "+00".utf8)
    }
}

extension PostgresCopyText {
    /// The UTC calendar fields of `millis` since 1970, its year and its
    /// milliseconds. PostgreSQL's timestamptz spans 4713 BC to 294276 AD;
    /// years before 1 AD are refused here.
    static func utcParts(_ millis: Int64) throws(PostgresError) -> (tm, year: Int, fraction: Int64) {
        let (seconds, remainder) = millis.quotientAndRemainder(dividingBy: 1000)
        let wholeSeconds = remainder < 0 ? seconds - 1 : seconds
        let fraction = remainder < 0 ? remainder + 1000 : remainder
        var time = time_t(wholeSeconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else {
            throw PostgresError(.usage, "the date \(millis) ms since 1970 is outside the range PostgreSQL can store")
        }
        let year = Int(parts.tm_year) + 1900
        guard (1...294_275).contains(year) else {
            throw PostgresError(.usage, "the date \(millis) ms since 1970 (year \(year)) is outside the range PostgreSQL can store")
        }
        return (parts, year, fraction)
    }

    /// Puts each column's field of the object whose BSON is `raw` into
    /// `slots` (nil where absent): where the schema check found the fields,
    /// else by a walk of the document. Shared by the text and binary rows.
    @inline(__always)
    static func collectColumns(
        _ raw: UnsafeRawBufferPointer, keys: BSONKeyTable, slots: inout [BSONElement?], object index: Int,
        collection: String, fields: (SinkFields, propertyOfColumn: [Int])?
    ) throws(PostgresError) {
        do {
            // Where the schema check found the fields, else a walk.
            if !(fields.map { $0.0.collect(raw, propertyOfColumn: $0.propertyOfColumn, into: &slots) } ?? false) {
                try keys.collect(raw, into: &slots)
            }
        } catch let error as BSONError {
            throw PostgresError(.usage, "object \(index) of \(collection) is not a valid BSON document: \(error.message)")
        } catch {
            throw PostgresError(.usage, "object \(index) of \(collection) cannot be read: \(error)")
        }
    }
}

/// Encodes rows in `COPY … FROM STDIN WITH (FORMAT binary)`: a header, per
/// row the field count and each field as its length and PostgreSQL's binary
/// form (NULL as length -1), a trailer. Numbers, booleans and bytes go as
/// they are, with no text to print on the server or to parse in
/// PostgreSQL. Accepts and refuses exactly the values ``PostgresCopyText``
/// does; used for tables without `numeric` or `real` columns (whose binary
/// forms, a base-10000 digit array and a float4 rounded from the double,
/// are not written here: those tables use the text format).
enum PostgresCopyBinary {
    /// The signature, the flags (no OIDs) and an empty header extension.
    static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// The field count -1 that ends the data.
    static let trailer: [UInt8] = [0xFF, 0xFF]
    /// Microseconds from 1970 to 2000-01-01, PostgreSQL's timestamp epoch.
    private static let epochOffsetMilliseconds: Int64 = 946_684_800_000

    /// Whether rows of `columns` can be written in the binary format.
    static func canEncode(_ columns: [(name: String, form: PostgresColumnForm)]) -> Bool {
        !columns.contains { $0.form == .numeric || $0.form == .real }
    }

    /// ``PostgresCopyText/appendRow(_:columns:keys:slots:to:object:collection:)`` in the binary format.
    static func appendRow(
        _ raw: UnsafeRawBufferPointer, columns: [(name: String, form: PostgresColumnForm)], keys: BSONKeyTable,
        slots: inout [BSONElement?], to out: inout [UInt8], object index: Int,
        collection: String, fields: (SinkFields, propertyOfColumn: [Int])? = nil
    ) throws(PostgresError) {
        try PostgresCopyText.collectColumns(raw, keys: keys, slots: &slots, object: index, collection: collection, fields: fields)
        appendBigEndian(UInt16(columns.count), to: &out)
        for (position, column) in columns.enumerated() {
            do throws(PostgresError) {
                try append(slots[position], form: column.form, to: &out)
            } catch {
                throw PostgresError(.usage, "object \(index) of \(collection), property \(column.name): \(error.message)")
            }
        }
    }

    /// One field: the common scalar forms from the element's bytes,
    /// anything else through its decoded value.
    static func append(_ element: BSONElement?, form: PostgresColumnForm, to out: inout [UInt8]) throws(PostgresError) {
        guard let element else {
            appendNull(to: &out)
            return
        }
        switch (form, element.type) {
        case (.text, .string):
            if let bytes = element.stringBytes {
                guard !bytes.contains(0) else {
                    throw PostgresError(.usage, "PostgreSQL text cannot hold the NUL character (U+0000)")
                }
                appendField(bytes, to: &out)
            }
        case (.bigint, .int32), (.bigint, .int64):
            appendLength(8, to: &out)
            appendBigEndian(UInt64(bitPattern: element.integer ?? 0), to: &out)
        case (.double, .double):
            appendLength(8, to: &out)
            appendBigEndian((element.double ?? 0).bitPattern, to: &out)
        case (.boolean, .bool):
            appendLength(1, to: &out)
            out.append(element.bool == true ? 1 : 0)
        case (.bytea, .objectId):
            if let bytes = element.objectIdBytes { appendField(bytes, to: &out) }
        default:
            let value: BSON
            do { value = try element.value() } catch {
                throw PostgresError(.usage, "the value cannot be read: \(error.message)")
            }
            try append(value, form: form, to: &out)
        }
    }

    /// One field from a decoded value (the rules of ``PostgresCopyText/append(_:form:to:)``).
    static func append(_ value: BSON, form: PostgresColumnForm, to out: inout [UInt8]) throws(PostgresError) {
        switch (form, value) {
        case (_, .null), (_, .undefined):
            appendNull(to: &out)
        case (.jsonb, _):
            // jsonb's binary form: version 1, then the JSON text.
            let text = Array(value.extendedJSON(.relaxed).utf8)
            guard !text.contains(0) else {
                throw PostgresError(.usage, "PostgreSQL text cannot hold the NUL character (U+0000)")
            }
            appendLength(text.count + 1, to: &out)
            out.append(1)
            out.append(contentsOf: text)
        case (.boolean, .bool(let flag)):
            appendLength(1, to: &out)
            out.append(flag ? 1 : 0)
        case (.bigint, .int32(let number)):
            appendLength(8, to: &out)
            appendBigEndian(UInt64(bitPattern: Int64(number)), to: &out)
        case (.bigint, .int64(let number)):
            appendLength(8, to: &out)
            appendBigEndian(UInt64(bitPattern: number), to: &out)
        case (.double, .double(let number)):
            appendLength(8, to: &out)
            appendBigEndian(number.bitPattern, to: &out)
        case (.double, .int32(let number)):
            appendLength(8, to: &out)
            appendBigEndian(Double(number).bitPattern, to: &out)
        case (.double, .int64(let number)):
            // Rounded to the nearest double, as PostgreSQL reads the integer's text.
            appendLength(8, to: &out)
            appendBigEndian(Double(number).bitPattern, to: &out)
        case (.text, .string(let text)):
            let bytes = Array(text.utf8)
            guard !bytes.contains(0) else {
                throw PostgresError(.usage, "PostgreSQL text cannot hold the NUL character (U+0000)")
            }
            bytes.withUnsafeBytes { appendField($0, to: &out) }
        case (.bytea, .objectId(let id)):
            id.bytes.withUnsafeBytes { appendField($0, to: &out) }
        case (.bytea, .binary(let binary)):
            binary.bytes.withUnsafeBytes { appendField($0, to: &out) }
        case (.uuid, .binary(let binary)) where binary.bytes.count == 16:
            binary.bytes.withUnsafeBytes { appendField($0, to: &out) }
        case (.timestamptz, .datetime(let millis)):
            _ = try PostgresCopyText.utcParts(millis)  // the same range as the text format
            appendLength(8, to: &out)
            let micros = (millis - epochOffsetMilliseconds).multipliedReportingOverflow(by: 1000)
            appendBigEndian(UInt64(bitPattern: micros.partialValue), to: &out)
        default:
            throw PostgresError(.usage, "a \(value.typeName) value cannot be stored in a \(form.sqlType) column")
        }
    }

    private static func appendNull(to out: inout [UInt8]) {
        out.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
    }

    private static func appendLength(_ length: Int, to out: inout [UInt8]) {
        appendBigEndian(UInt32(truncatingIfNeeded: length), to: &out)
    }

    private static func appendField(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendLength(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    // Byte by byte: `append(contentsOf:)` of a value's bytes costs far more
    // per call than the few bytes it copies.
    @inline(__always)
    private static func appendBigEndian<T: FixedWidthInteger & UnsignedInteger>(_ value: T, to out: inout [UInt8]) {
        var shift = T.bitWidth - 8
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }
}

extension BSON {
    /// A short name of the value's BSON type, for messages.
    var typeName: String {
        switch self {
        case .double: "double"
        case .string: "string"
        case .document: "document"
        case .array: "array"
        case .binary: "binary"
        case .undefined: "undefined"
        case .objectId: "objectId"
        case .bool: "bool"
        case .datetime: "date"
        case .null: "null"
        case .regex: "regex"
        case .dbPointer: "dbPointer"
        case .javascript: "javascript"
        case .symbol: "symbol"
        case .javascriptWithScope: "javascriptWithScope"
        case .int32: "int32"
        case .timestamp: "timestamp"
        case .int64: "int64"
        case .decimal128: "decimal128"
        case .minKey: "minKey"
        case .maxKey: "maxKey"
        }
    }
}
