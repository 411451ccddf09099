import Foundation
import IngestCore

/// Decodes a Realm changeset (realm-core 14's encoding) one instruction at a
/// time, without holding more than the interned strings and the current
/// instruction.
///
/// The encoding: integers in a variable-length code of 7 bits per byte with
/// 0x80 as the continuation flag, the last byte carrying 6 bits and a sign
/// flag 0x40 (a negative `v` stored as `-(v + 1)`), each field with at most
/// the bytes realm-core allows for its width; strings as a length and bytes;
/// floats and doubles raw little-endian; ObjectIds 12 and UUIDs 16 raw bytes;
/// decimals as a 113-bit coefficient in 7-bit groups, then the exponent and the
/// sign. Strict: every length is checked against what is left, integers must
/// fit their field, booleans are 0 or 1, a path key is marked by exactly -1,
/// timestamps are normalized, strings are UTF-8, and paths are at most
/// ``Limits/maxPathLength`` long. Every error carries the offset.
///
/// ```swift
/// var decoder = ChangesetDecoder(bytes)
/// while let instruction = try decoder.next() { apply(instruction) }
/// ```
public struct ChangesetDecoder: Sendable {
    /// Limits against hostile input.
    public struct Limits: Sendable, Hashable {
        /// The longest path (elements after the field). Default 64.
        public var maxPathLength: Int
        /// The most interned strings. Default 1,000,000.
        public var maxInternedStrings: Int
        /// The longest string or binary value. Default 16 MiB (realm-core's
        /// own limit is just under 16 MiB).
        public var maxValueBytes: Int

        /// Creates limits; every argument has a documented default.
        public init(maxPathLength: Int = 64, maxInternedStrings: Int = 1_000_000, maxValueBytes: Int = 16 << 20) {
            self.maxPathLength = maxPathLength
            self.maxInternedStrings = maxInternedStrings
            self.maxValueBytes = maxValueBytes
        }
    }

    private let bytes: [UInt8]
    /// The offset of the next byte to decode.
    public private(set) var offset = 0
    /// The interned strings defined so far, by index.
    public private(set) var internedStrings: [String] = []
    private var internedSet: Set<String> = []
    /// The limits in force.
    public let limits: Limits

    /// A decoder over a whole changeset.
    public init(_ bytes: [UInt8], limits: Limits = Limits()) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Decodes a whole changeset.
    /// - Throws: ``ChangesetError``.
    public static func decodeAll(_ bytes: [UInt8], limits: Limits = Limits()) throws(ChangesetError) -> [Instruction] {
        var decoder = ChangesetDecoder(bytes, limits: limits)
        var instructions: [Instruction] = []
        while let instruction = try decoder.next() { instructions.append(instruction) }
        return instructions
    }

    /// Decodes one value on its own (type and value, as a `json_error`'s
    /// base64 primary key holds it); the bytes must be exactly one value.
    /// - Throws: ``ChangesetError``.
    public static func decodeValue(_ bytes: [UInt8], limits: Limits = Limits()) throws(ChangesetError) -> Payload {
        var decoder = ChangesetDecoder(bytes, limits: limits)
        let value = try decoder.payload()
        guard decoder.isAtEnd else {
            throw ChangesetError(.malformed, offset: decoder.offset, message: "bytes after the value")
        }
        return value
    }

    /// Whether every byte has been decoded.
    public var isAtEnd: Bool { offset == bytes.count }

    /// The next instruction, or nil at the end of the changeset.
    /// - Throws: ``ChangesetError``; the decoder must not be used after an error.
    public mutating func next() throws(ChangesetError) -> Instruction? {
        guard offset < bytes.count else { return nil }
        let start = offset
        let code = try unsigned(maxBytes: 10, max: UInt64.max, "an instruction code")
        switch code {
        case 0x3F:
            let indexOffset = offset
            let index = try uint32("an intern index")
            guard Int(index) == internedStrings.count else {
                throw ChangesetError(
                    .malformed, offset: indexOffset,
                    message: "intern index \(index), expected \(internedStrings.count)")
            }
            guard internedStrings.count < limits.maxInternedStrings else {
                throw ChangesetError(
                    .limitExceeded, offset: indexOffset, message: "more than \(limits.maxInternedStrings) interned strings")
            }
            let stringOffset = offset
            let string = try string("an interned string")
            guard internedSet.insert(string).inserted else {
                throw ChangesetError(.malformed, offset: stringOffset, message: "the string \"\(string.prefix(40))\" is interned twice")
            }
            internedStrings.append(string)
            return .internString(index: index, string: string)
        case 0:
            let table = try interned("a table name")
            let typeOffset = offset
            let rawType = try uint8("a table type")
            guard let type = TableType(rawValue: rawType) else {
                throw ChangesetError(.malformed, offset: typeOffset, message: "unknown table type \(rawType)")
            }
            guard type != .embedded else { return .addTable(AddTable(table: table, type: type, primaryKey: nil)) }
            let field = try interned("a primary key name")
            let keyTypeOffset = offset
            let keyType = try payloadType()
            switch keyType {
            case .int, .string, .objectId, .uuid, .globalKey: break
            default:
                throw ChangesetError(.malformed, offset: keyTypeOffset, message: "a primary key cannot be of type \(keyType)")
            }
            let nullable = try bool("primary key nullability")
            return .addTable(AddTable(table: table, type: type, primaryKey: .init(field: field, type: keyType, isNullable: nullable)))
        case 1:
            return .eraseTable(table: try interned("a table name"))
        case 2:
            let table = try interned("a table name")
            return .createObject(table: table, object: try primaryKey())
        case 3:
            let table = try interned("a table name")
            return .eraseObject(table: table, object: try primaryKey())
        case 4:
            let path = try objectPath()
            let value = try payload()
            if path.endsInIndex {
                return .update(Update(path: path, value: value, priorSize: try uint32("a prior size")))
            }
            return .update(Update(path: path, value: value, isDefault: try bool("is-default")))
        case 5:
            let path = try objectPath()
            return .addInteger(path, value: try int64("an integer"))
        case 6:
            let table = try interned("a table name")
            let field = try interned("a column name")
            let type = try payloadType()
            let nullable = try bool("column nullability")
            let collection = try collectionType()
            var column = AddColumn(table: table, field: field, type: type, isNullable: nullable, collection: collection)
            if type == .link { column.linkTarget = try interned("a link target") }
            if collection == .dictionary { column.keyType = try payloadType() }
            return .addColumn(column)
        case 7:
            let table = try interned("a table name")
            return .eraseColumn(table: table, field: try interned("a column name"))
        case 8:
            let path = try indexPath("ArrayInsert", start)
            let value = try payload()
            return .arrayInsert(path, value: value, priorSize: try uint32("a prior size"))
        case 9:
            let path = try indexPath("ArrayMove", start)
            let newIndex = try uint32("a target index")
            return .arrayMove(path, newIndex: newIndex, priorSize: try uint32("a prior size"))
        case 10:
            let path = try indexPath("ArrayErase", start)
            return .arrayErase(path, priorSize: try uint32("a prior size"))
        case 11:
            let path = try objectPath()
            return .clear(path, collection: try collectionType())
        case 12:
            let path = try objectPath()
            return .setInsert(path, value: try payload())
        case 13:
            let path = try objectPath()
            return .setErase(path, value: try payload())
        default:
            throw ChangesetError(.malformed, offset: start, message: "unknown instruction code \(code)")
        }
    }

    // MARK: Composite values

    private mutating func indexPath(_ name: String, _ start: Int) throws(ChangesetError) -> ObjectPath {
        let path = try objectPath()
        guard path.endsInIndex else {
            throw ChangesetError(.malformed, offset: start, message: "\(name) on a path that does not end in a list index")
        }
        return path
    }

    private mutating func objectPath() throws(ChangesetError) -> ObjectPath {
        let table = try interned("a table name")
        let object = try primaryKey()
        let field = try interned("a field name")
        let countOffset = offset
        let count = try uint32("a path length")
        guard count <= limits.maxPathLength else {
            throw ChangesetError(
                .limitExceeded, offset: countOffset,
                message: "a path of \(count) elements; at most \(limits.maxPathLength) are accepted")
        }
        var path: [PathElement] = []
        // Most paths are empty: reserving nothing would still allocate.
        if count > 0 { path.reserveCapacity(Int(count)) }
        for _ in 0..<count {
            let elementOffset = offset
            let element = try int64("a path element")
            if element >= 0 {
                guard let index = UInt32(exactly: element) else {
                    throw ChangesetError(.malformed, offset: elementOffset, message: "a list index beyond 32 bits")
                }
                path.append(.index(index))
            } else {
                guard element == -1 else {
                    throw ChangesetError(.malformed, offset: elementOffset, message: "a path element \(element); a key is marked by -1")
                }
                path.append(.key(try interned("a path key")))
            }
        }
        return ObjectPath(table: table, object: object, field: field, path: path)
    }

    private mutating func primaryKey() throws(ChangesetError) -> PrimaryKey {
        let typeOffset = offset
        switch try payloadType() {
        case .null: return .null
        case .int: return .int(try int64("an int key"))
        case .string: return .string(try interned("a string key"))
        case .globalKey:
            let high = try unsigned(maxBytes: 10, max: UInt64.max, "a global key")
            return .globalKey(high: high, low: try unsigned(maxBytes: 10, max: UInt64.max, "a global key"))
        case .objectId: return .objectId(try objectId())
        case .uuid: return .uuid(try uuid())
        case let other:
            throw ChangesetError(.malformed, offset: typeOffset, message: "a primary key cannot be of type \(other)")
        }
    }

    private mutating func payload() throws(ChangesetError) -> Payload {
        let typeOffset = offset
        switch try payloadType() {
        case .set: return .set
        case .list: return .list
        case .erased: return .erased
        case .dictionary: return .dictionary
        case .objectValue: return .objectValue
        case .null: return .null
        case .globalKey:
            throw ChangesetError(.malformed, offset: typeOffset, message: "a GlobalKey cannot be a value")
        case .int: return .int(try int64("an int"))
        case .bool: return .bool(try bool("a bool"))
        case .string: return .string(try string("a string"))
        case .binary: return .binary(try rawBytes(try length("binary data"), "binary data"))
        case .timestamp:
            let seconds = try int64("timestamp seconds")
            let nanosecondsOffset = offset
            let nanoseconds = try int64("timestamp nanoseconds")
            guard nanoseconds > -1_000_000_000, nanoseconds < 1_000_000_000,
                (seconds >= 0 && nanoseconds >= 0) || (seconds <= 0 && nanoseconds <= 0)
            else {
                throw ChangesetError(
                    .malformed, offset: nanosecondsOffset,
                    message: "timestamp nanoseconds \(nanoseconds) with seconds \(seconds)")
            }
            return .timestamp(seconds: seconds, nanoseconds: Int32(nanoseconds))
        case .float: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: try littleEndian(4, "a float"))))
        case .double: return .double(Double(bitPattern: try littleEndian(8, "a double")))
        case .decimal: return .decimal(try decimal())
        case .link:
            let table = try interned("a link target")
            return .link(table: table, key: try primaryKey())
        case .objectId: return .objectId(try objectId())
        case .uuid: return .uuid(try uuid())
        }
    }

    private mutating func decimal() throws(ChangesetError) -> Decimal128 {
        let start = offset
        var low: UInt64 = 0
        var high: UInt64 = 0
        var index = 0
        while true {
            guard offset < bytes.count else { throw truncated(start, "a decimal") }
            let byte = bytes[offset]
            offset += 1
            let part = UInt64(byte & 0x7F)
            switch index {
            case 0..<9: low |= part << UInt64(7 * index)
            case 9:
                low |= part << 63
                high |= part >> 1
            case 10..<17: high |= part << UInt64(7 * index - 64)
            default:
                throw ChangesetError(.malformed, offset: start, message: "a decimal coefficient longer than 17 bytes")
            }
            if byte & 0x80 == 0 { break }
            index += 1
        }
        guard high >> 49 == 0 else {
            throw ChangesetError(.malformed, offset: start, message: "a decimal coefficient wider than 113 bits")
        }
        let exponentOffset = offset
        let exponent = try signed(maxBytes: 5, max: UInt64(Int32.max), "a decimal exponent")
        let sign = try bool("a decimal sign")
        let biased = exponent + 6176
        guard biased >= 0 && biased <= 0x3FFF else {
            throw ChangesetError(.malformed, offset: exponentOffset, message: "decimal exponent \(exponent) is out of range")
        }
        high |= UInt64(biased) << 49
        if sign { high |= 1 << 63 }
        return Decimal128(high: high, low: low)
    }

    private mutating func objectId() throws(ChangesetError) -> ObjectId {
        // Read in place: `ObjectId(bytes:)` is generic and not inlinable, and
        // unspecialized it cost 40% of the Realm endpoint's server CPU
        // (ingest-bench realm, perf, 2 December 2026).
        guard bytes.count - offset >= 12 else { throw truncated(offset, "an ObjectId") }
        var high: UInt64 = 0
        for index in offset..<offset + 8 { high = high << 8 | UInt64(bytes[index]) }
        var low: UInt32 = 0
        for index in offset + 8..<offset + 12 { low = low << 8 | UInt32(bytes[index]) }
        offset += 12
        return ObjectId(high: high, low: low)
    }

    /// `count` raw bytes as a little-endian integer, read in place (an
    /// array per float or double cost an allocation per value).
    private mutating func littleEndian(_ count: Int, _ what: StaticString) throws(ChangesetError) -> UInt64 {
        guard bytes.count - offset >= count else { throw truncated(offset, what) }
        var bits: UInt64 = 0
        for index in (offset..<offset + count).reversed() { bits = bits << 8 | UInt64(bytes[index]) }
        offset += count
        return bits
    }

    private mutating func uuid() throws(ChangesetError) -> UUID {
        let raw = try rawBytes(16, "a UUID")
        return UUID(
            uuid: (
                raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]
            ))
    }

    // MARK: Scalars

    private mutating func payloadType() throws(ChangesetError) -> PayloadType {
        let start = offset
        let raw = try int64("a value type")
        guard let small = Int8(exactly: raw), let type = PayloadType(rawValue: small) else {
            throw ChangesetError(.malformed, offset: start, message: "unknown value type \(raw)")
        }
        return type
    }

    private mutating func collectionType() throws(ChangesetError) -> CollectionType {
        let start = offset
        let raw = try uint8("a collection type")
        guard let type = CollectionType(rawValue: raw) else {
            throw ChangesetError(.malformed, offset: start, message: "unknown collection type \(raw)")
        }
        return type
    }

    private mutating func interned(_ what: StaticString) throws(ChangesetError) -> String {
        let start = offset
        let index = try uint32(what)
        guard Int(index) < internedStrings.count else {
            throw ChangesetError(.malformed, offset: start, message: "\(what) names string \(index), which is not interned")
        }
        return internedStrings[Int(index)]
    }

    private mutating func string(_ what: StaticString) throws(ChangesetError) -> String {
        let count = try length(what)
        let start = offset
        guard let text = String(validating: bytes[offset..<offset + count], as: UTF8.self) else {
            throw ChangesetError(.invalidUTF8, offset: start, message: "\(what) is not valid UTF-8")
        }
        offset += count
        return text
    }

    /// A string or binary length, checked against the limit and the bytes left.
    private mutating func length(_ what: StaticString) throws(ChangesetError) -> Int {
        let start = offset
        let count = try unsigned(maxBytes: 10, max: UInt64.max, what)
        guard count <= UInt64(limits.maxValueBytes) else {
            throw ChangesetError(.limitExceeded, offset: start, message: "\(what) of \(count) bytes; at most \(limits.maxValueBytes)")
        }
        guard count <= UInt64(bytes.count - offset) else { throw truncated(start, what) }
        return Int(count)
    }

    private mutating func rawBytes(_ count: Int, _ what: StaticString) throws(ChangesetError) -> [UInt8] {
        guard bytes.count - offset >= count else { throw truncated(offset, what) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    private mutating func bool(_ what: StaticString) throws(ChangesetError) -> Bool {
        let start = offset
        let value = try uint8(what)
        guard value <= 1 else { throw ChangesetError(.malformed, offset: start, message: "\(what) is \(value), not 0 or 1") }
        return value == 1
    }

    private mutating func uint8(_ what: StaticString) throws(ChangesetError) -> UInt8 {
        UInt8(try unsigned(maxBytes: 2, max: UInt64(UInt8.max), what))
    }

    private mutating func uint32(_ what: StaticString) throws(ChangesetError) -> UInt32 {
        UInt32(try unsigned(maxBytes: 5, max: UInt64(UInt32.max), what))
    }

    private mutating func int64(_ what: StaticString) throws(ChangesetError) -> Int64 {
        try signed(maxBytes: 10, max: UInt64(Int64.max), what)
    }

    private mutating func signed(maxBytes: Int, max: UInt64, _ what: StaticString) throws(ChangesetError) -> Int64 {
        let (magnitude, negative) = try varint(maxBytes: maxBytes, max: max, what)
        return negative ? ~Int64(magnitude) : Int64(magnitude)
    }

    private mutating func unsigned(maxBytes: Int, max: UInt64, _ what: StaticString) throws(ChangesetError) -> UInt64 {
        let start = offset
        let (magnitude, negative) = try varint(maxBytes: maxBytes, max: max, what)
        guard !negative else { throw ChangesetError(.malformed, offset: start, message: "\(what) is negative") }
        return magnitude
    }

    /// The variable-length code: returns the magnitude (≤ `max`, else
    /// malformed) and the sign flag of the last byte.
    private mutating func varint(maxBytes: Int, max: UInt64, _ what: StaticString) throws(ChangesetError) -> (UInt64, Bool) {
        let start = offset
        var value: UInt64 = 0
        for index in 0..<maxBytes {
            guard offset < bytes.count else { throw truncated(start, what) }
            let byte = bytes[offset]
            offset += 1
            let last = byte & 0x80 == 0
            let part = UInt64(last ? byte & 0x3F : byte & 0x7F)
            let shift = UInt64(7 * index)
            if part != 0 && (shift >= 64 || (part << shift) >> shift != part) {
                throw ChangesetError(.malformed, offset: start, message: "\(what) is out of range")
            }
            if shift < 64 { value |= part << shift }
            if last {
                guard value <= max else { throw ChangesetError(.malformed, offset: start, message: "\(what) is out of range") }
                return (value, byte & 0x40 != 0)
            }
        }
        throw ChangesetError(.malformed, offset: start, message: "\(what) is longer than \(maxBytes) bytes")
    }

    private func truncated(_ at: Int, _ what: StaticString) -> ChangesetError {
        ChangesetError(.truncated, offset: at, message: "the changeset ends inside \(what)")
    }
}
