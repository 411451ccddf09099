/// One BSON value: every type of the BSON 1.1 specification (bsonspec.org).
///
/// ```swift
/// let reading: BSONDocument = [
///     "_id": .objectId(ObjectId.generate()),
///     "deviceId": "WX1278UIT",
///     "temperatureInFahrenheit": .double(66.7),
/// ]
/// ```
public enum BSON: Sendable, Hashable {
    /// 0x01: 64-bit IEEE 754 binary floating point.
    case double(Double)
    /// 0x02: UTF-8 string.
    case string(String)
    /// 0x03: embedded document.
    case document(BSONDocument)
    /// 0x04: array (stored as a document with keys "0", "1", …).
    case array([BSON])
    /// 0x05: binary data with a subtype.
    case binary(BSONBinary)
    /// 0x06: undefined (deprecated).
    case undefined
    /// 0x07: ObjectId.
    case objectId(ObjectId)
    /// 0x08: boolean.
    case bool(Bool)
    /// 0x09: UTC datetime, milliseconds since the Unix epoch.
    case datetime(Int64)
    /// 0x0A: null.
    case null
    /// 0x0B: regular expression; options are stored sorted.
    case regex(pattern: String, options: String)
    /// 0x0C: DBPointer (deprecated).
    case dbPointer(ref: String, id: ObjectId)
    /// 0x0D: JavaScript code.
    case javascript(String)
    /// 0x0E: symbol (deprecated).
    case symbol(String)
    /// 0x0F: JavaScript code with scope.
    case javascriptWithScope(code: String, scope: BSONDocument)
    /// 0x10: 32-bit signed integer.
    case int32(Int32)
    /// 0x11: timestamp (MongoDB internal): increment, then seconds.
    case timestamp(BSONTimestamp)
    /// 0x12: 64-bit signed integer.
    case int64(Int64)
    /// 0x13: IEEE 754-2008 decimal128 (BID encoding).
    case decimal128(Decimal128)
    /// 0xFF: min key.
    case minKey
    /// 0x7F: max key.
    case maxKey
}

/// A BSON timestamp: on the wire, the increment in the low 32 bits and the
/// seconds in the high 32 bits of a little-endian 64-bit integer.
public struct BSONTimestamp: Sendable, Hashable {
    /// Seconds since the Unix epoch (the high 32 bits).
    public var seconds: UInt32
    /// An ordinal within the second (the low 32 bits).
    public var increment: UInt32

    /// A timestamp from its two halves.
    public init(seconds: UInt32, increment: UInt32) {
        self.seconds = seconds
        self.increment = increment
    }
}

extension BSON: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
}
