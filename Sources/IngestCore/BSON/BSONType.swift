/// The type byte that precedes every element of a BSON document.
///
/// ```swift
/// BSON.int64(42).type            // .int64
/// BSONType.int64.rawValue        // 0x12
/// ```
public enum BSONType: UInt8, Sendable, Hashable, CaseIterable {
    /// 0x01: 64-bit binary floating point.
    case double = 0x01
    /// 0x02: UTF-8 string.
    case string = 0x02
    /// 0x03: Embedded document.
    case document = 0x03
    /// 0x04: Array (a document keyed "0", "1", …).
    case array = 0x04
    /// 0x05: Binary data with a subtype.
    case binary = 0x05
    /// 0x06: Undefined (deprecated).
    case undefined = 0x06
    /// 0x07: ObjectId.
    case objectId = 0x07
    /// 0x08: Boolean.
    case bool = 0x08
    /// 0x09: UTC datetime, milliseconds since the Unix epoch.
    case datetime = 0x09
    /// 0x0A: Null.
    case null = 0x0A
    /// 0x0B: Regular expression.
    case regex = 0x0B
    /// 0x0C: DBPointer (deprecated).
    case dbPointer = 0x0C
    /// 0x0D: JavaScript code.
    case javascript = 0x0D
    /// 0x0E: Symbol (deprecated).
    case symbol = 0x0E
    /// 0x0F: JavaScript code with scope.
    case javascriptWithScope = 0x0F
    /// 0x10: 32-bit integer.
    case int32 = 0x10
    /// 0x11: MongoDB timestamp.
    case timestamp = 0x11
    /// 0x12: 64-bit integer.
    case int64 = 0x12
    /// 0x13: Decimal128.
    case decimal128 = 0x13
    /// 0xFF: Min key.
    case minKey = 0xFF
    /// 0x7F: Max key.
    case maxKey = 0x7F
}

extension BSON {
    /// The type byte this value is encoded with.
    public var type: BSONType {
        switch self {
        case .double: .double
        case .string: .string
        case .document: .document
        case .array: .array
        case .binary: .binary
        case .undefined: .undefined
        case .objectId: .objectId
        case .bool: .bool
        case .datetime: .datetime
        case .null: .null
        case .regex: .regex
        case .dbPointer: .dbPointer
        case .javascript: .javascript
        case .symbol: .symbol
        case .javascriptWithScope: .javascriptWithScope
        case .int32: .int32
        case .timestamp: .timestamp
        case .int64: .int64
        case .decimal128: .decimal128
        case .minKey: .minKey
        case .maxKey: .maxKey
        }
    }
}
