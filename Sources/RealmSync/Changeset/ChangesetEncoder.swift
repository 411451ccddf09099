import Foundation
import IngestCore
import IngestSupport

/// Encodes instructions as a Realm changeset, the inverse of
/// ``ChangesetDecoder``: a decoded changeset encodes back to the same bytes.
/// Strings that no ``Instruction/internString(index:string:)`` has defined
/// yet are interned on first use, as realm-core's encoder does, so tests and
/// load clients can build changesets from names alone.
///
/// ```swift
/// var encoder = ChangesetEncoder()
/// encoder.append(.createObject(table: "SensorReading", object: .objectId(id)))
/// encoder.append(.update(Update(path: ObjectPath(table: "SensorReading", object: .objectId(id), field: "deviceId"),
///                               value: .string("WX1000"))))
/// let bytes = encoder.bytes
/// ```
public struct ChangesetEncoder: Sendable {
    /// The encoded changeset so far.
    public private(set) var bytes: [UInt8] = []
    private var indexByString: [String: UInt32] = [:]

    /// An empty changeset.
    public init() {}

    /// Encodes `instructions`.
    public static func encode(_ instructions: [Instruction]) -> [UInt8] {
        var encoder = ChangesetEncoder()
        for instruction in instructions { encoder.append(instruction) }
        return encoder.bytes
    }

    /// Appends one instruction (after interning any string it names that is
    /// not interned yet). An ``Instruction/internString(index:string:)`` of a
    /// string already interned, or with an index out of order, is written as
    /// given (a decoder rejects it: useful for tests of hostile input).
    public mutating func append(_ instruction: Instruction) {
        switch instruction {
        case .internString(let index, let string):
            if indexByString[string] == nil && Int(index) == indexByString.count { indexByString[string] = index }
            writeIntern(index, string)
            return
        default:
            break
        }
        internNames(of: instruction)
        unsigned(UInt64(instruction.code))
        switch instruction {
        case .internString:
            break
        case .addTable(let table):
            name(table.table)
            unsigned(UInt64(table.type.rawValue))
            if let key = table.primaryKey {
                name(key.field)
                signed(Int64(key.type.rawValue))
                unsigned(key.isNullable ? 1 : 0)
            }
        case .eraseTable(let table):
            name(table)
        case .createObject(let table, let object), .eraseObject(let table, let object):
            name(table)
            primaryKey(object)
        case .update(let update):
            objectPath(update.path)
            payload(update.value)
            unsigned(update.isArrayUpdate ? UInt64(update.priorSize) : (update.isDefault ? 1 : 0))
        case .addInteger(let path, let value):
            objectPath(path)
            signed(value)
        case .addColumn(let column):
            name(column.table)
            name(column.field)
            signed(Int64(column.type.rawValue))
            unsigned(column.isNullable ? 1 : 0)
            unsigned(UInt64(column.collection.rawValue))
            if column.type == .link { name(column.linkTarget ?? "") }
            if column.collection == .dictionary { signed(Int64((column.keyType ?? .string).rawValue)) }
        case .eraseColumn(let table, let field):
            name(table)
            name(field)
        case .arrayInsert(let path, let value, let priorSize):
            objectPath(path)
            payload(value)
            unsigned(UInt64(priorSize))
        case .arrayMove(let path, let newIndex, let priorSize):
            objectPath(path)
            unsigned(UInt64(newIndex))
            unsigned(UInt64(priorSize))
        case .arrayErase(let path, let priorSize):
            objectPath(path)
            unsigned(UInt64(priorSize))
        case .clear(let path, let collection):
            objectPath(path)
            unsigned(UInt64(collection.rawValue))
        case .setInsert(let path, let value), .setErase(let path, let value):
            objectPath(path)
            payload(value)
        }
    }

    // MARK: Strings

    /// Interns, in order of appearance, every name the instruction uses.
    private mutating func internNames(of instruction: Instruction) {
        func path(_ path: ObjectPath) {
            intern(path.table)
            key(path.object)
            intern(path.field)
            for case .key(let name) in path.path { intern(name) }
        }
        func key(_ key: PrimaryKey) {
            if case .string(let name) = key { intern(name) }
        }
        func value(_ payload: Payload) {
            if case .link(let table, let target) = payload {
                intern(table)
                key(target)
            }
        }
        switch instruction {
        case .internString: break
        case .addTable(let table):
            intern(table.table)
            if let primaryKey = table.primaryKey { intern(primaryKey.field) }
        case .eraseTable(let table): intern(table)
        case .createObject(let table, let object), .eraseObject(let table, let object):
            intern(table)
            key(object)
        case .update(let update):
            path(update.path)
            value(update.value)
        case .addInteger(let objectPath, _), .arrayMove(let objectPath, _, _), .arrayErase(let objectPath, _),
            .clear(let objectPath, _):
            path(objectPath)
        case .addColumn(let column):
            intern(column.table)
            intern(column.field)
            if column.type == .link { intern(column.linkTarget ?? "") }
        case .eraseColumn(let table, let field):
            intern(table)
            intern(field)
        case .arrayInsert(let objectPath, let payload, _), .setInsert(let objectPath, let payload),
            .setErase(let objectPath, let payload):
            path(objectPath)
            value(payload)
        }
    }

    private mutating func intern(_ string: String) {
        guard indexByString[string] == nil else { return }
        let index = UInt32(indexByString.count)
        indexByString[string] = index
        writeIntern(index, string)
    }

    private mutating func writeIntern(_ index: UInt32, _ string: String) {
        unsigned(0x3F)
        unsigned(UInt64(index))
        text(string)
    }

    private mutating func name(_ string: String) {
        unsigned(UInt64(indexByString[string] ?? 0))
    }

    private mutating func text(_ string: String) {
        unsigned(UInt64(string.utf8.count))
        bytes.append(contentsOf: string.utf8)
    }

    // MARK: Values

    private mutating func objectPath(_ path: ObjectPath) {
        name(path.table)
        primaryKey(path.object)
        name(path.field)
        unsigned(UInt64(path.path.count))
        for element in path.path {
            switch element {
            case .index(let index): signed(Int64(index))
            case .key(let key):
                signed(-1)
                name(key)
            }
        }
    }

    private mutating func primaryKey(_ key: PrimaryKey) {
        switch key {
        case .null: signed(Int64(PayloadType.null.rawValue))
        case .int(let value):
            signed(Int64(PayloadType.int.rawValue))
            signed(value)
        case .string(let string):
            signed(Int64(PayloadType.string.rawValue))
            name(string)
        case .globalKey(let high, let low):
            signed(Int64(PayloadType.globalKey.rawValue))
            unsigned(high)
            unsigned(low)
        case .objectId(let id):
            signed(Int64(PayloadType.objectId.rawValue))
            bytes.append(contentsOf: id.bytes)
        case .uuid(let uuid):
            signed(Int64(PayloadType.uuid.rawValue))
            Self.appendUUID(uuid, to: &bytes)
        }
    }

    private mutating func payload(_ value: Payload) {
        signed(Int64(value.type.rawValue))
        switch value {
        case .set, .list, .erased, .dictionary, .objectValue, .null: break
        case .int(let number): signed(number)
        case .bool(let flag): unsigned(flag ? 1 : 0)
        case .string(let string): text(string)
        case .binary(let data):
            unsigned(UInt64(data.count))
            bytes.append(contentsOf: data)
        case .timestamp(let seconds, let nanoseconds):
            signed(seconds)
            signed(Int64(nanoseconds))
        case .float(let number):
            let bits = number.bitPattern
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
        case .double(let number):
            let bits = number.bitPattern
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        case .decimal(let decimal):
            Self.appendDecimal(decimal, to: &bytes)
        case .link(let table, let key):
            name(table)
            primaryKey(key)
        case .objectId(let id): bytes.append(contentsOf: id.bytes)
        case .uuid(let uuid): Self.appendUUID(uuid, to: &bytes)
        }
    }

    private mutating func unsigned(_ value: UInt64) { Self.appendInteger(magnitude: value, negative: false, to: &bytes) }

    private mutating func signed(_ value: Int64) {
        if value < 0 {
            Self.appendInteger(magnitude: UInt64(bitPattern: ~value), negative: true, to: &bytes)
        } else {
            Self.appendInteger(magnitude: UInt64(value), negative: false, to: &bytes)
        }
    }

    /// The variable-length integer code: 7 bits per byte while more than 6
    /// remain, then 6 bits and the sign flag.
    static func appendInteger(magnitude: UInt64, negative: Bool, to out: inout [UInt8]) {
        var value = magnitude
        while value >> 6 != 0 {
            out.append(0x80 | UInt8(value & 0x7F))
            value >>= 7
        }
        out.append(UInt8(value) | (negative ? 0x40 : 0))
    }

    /// A decimal: the 113-bit coefficient in 7-bit groups (no sign flag), the
    /// unbiased exponent, the sign.
    static func appendDecimal(_ decimal: Decimal128, to out: inout [UInt8]) {
        var low = decimal.low
        var high = decimal.high & ((1 << 49) - 1)
        let exponent = Int64((decimal.high >> 49) & 0x3FFF) - 6176
        let negative = decimal.high >> 63 != 0
        while low >> 6 != 0 || high != 0 {
            out.append(0x80 | UInt8(low & 0x7F))
            low >>= 7
            low |= (high & 0x7F) << 57
            high >>= 7
        }
        out.append(UInt8(low))
        if exponent < 0 {
            appendInteger(magnitude: UInt64(bitPattern: ~exponent), negative: true, to: &out)
        } else {
            appendInteger(magnitude: UInt64(exponent), negative: false, to: &out)
        }
        out.append(negative ? 1 : 0)
    }

    static func appendUUID(_ uuid: UUID, to out: inout [UInt8]) {
        withUnsafeBytes(of: uuid.uuid) { out.append(contentsOf: $0) }
    }
}

extension PrimaryKey {
    /// The key as a `json_error`'s `rejectedUpdates` carries it: a changeset
    /// value (type, then the value; a string with its length), in base64.
    /// Never send a ``globalKey(high:low:)`` this way: realm-core 14 clients
    /// stop on an assertion when they read one.
    public var base64Encoded: String {
        var out: [UInt8] = []
        func type(_ type: PayloadType) {
            let raw = Int64(type.rawValue)
            if raw < 0 {
                ChangesetEncoder.appendInteger(magnitude: UInt64(bitPattern: ~raw), negative: true, to: &out)
            } else {
                ChangesetEncoder.appendInteger(magnitude: UInt64(raw), negative: false, to: &out)
            }
        }
        switch self {
        case .null: type(.null)
        case .int(let value):
            type(.int)
            if value < 0 {
                ChangesetEncoder.appendInteger(magnitude: UInt64(bitPattern: ~value), negative: true, to: &out)
            } else {
                ChangesetEncoder.appendInteger(magnitude: UInt64(value), negative: false, to: &out)
            }
        case .string(let string):
            type(.string)
            ChangesetEncoder.appendInteger(magnitude: UInt64(string.utf8.count), negative: false, to: &out)
            out.append(contentsOf: string.utf8)
        case .globalKey(let high, let low):
            type(.globalKey)
            ChangesetEncoder.appendInteger(magnitude: high, negative: false, to: &out)
            ChangesetEncoder.appendInteger(magnitude: low, negative: false, to: &out)
        case .objectId(let id):
            type(.objectId)
            out.append(contentsOf: id.bytes)
        case .uuid(let uuid):
            type(.uuid)
            ChangesetEncoder.appendUUID(uuid, to: &out)
        }
        return Base64.encode(out)
    }

    /// Reads a key from its base64 form (see ``base64Encoded``).
    /// - Throws: ``ChangesetError`` when the text is not base64 or not one whole key.
    public init(base64Encoded text: String) throws(ChangesetError) {
        guard let data = Base64.decode(text) else {
            throw ChangesetError(.malformed, offset: 0, message: "a primary key that is not base64")
        }
        // A string key is written as a length-prefixed string here (not an
        // interned index), exactly as a string value: decode it as one.
        let value = try ChangesetDecoder.decodeValue(data)
        switch value {
        case .null: self = .null
        case .int(let number): self = .int(number)
        case .string(let string): self = .string(string)
        case .objectId(let id): self = .objectId(id)
        case .uuid(let uuid): self = .uuid(uuid)
        default:
            throw ChangesetError(.malformed, offset: 0, message: "a primary key cannot be of type \(value.type)")
        }
    }
}
