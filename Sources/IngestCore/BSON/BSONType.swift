/// The type byte that precedes every element of a BSON document.
///
/// ```swift
/// BSON.int64(42).type            // .int64
/// BSONType.int64.rawValue        // 0x12
/// ```
public enum BSONType: UInt8, Sendable, Hashable, CaseIterable {
    case double = 0x01
    case string = 0x02
    case document = 0x03
    case array = 0x04
    case binary = 0x05
    case undefined = 0x06
    case objectId = 0x07
    case bool = 0x08
    case datetime = 0x09
    case null = 0x0A
    case regex = 0x0B
    case dbPointer = 0x0C
    case javascript = 0x0D
    case symbol = 0x0E
    case javascriptWithScope = 0x0F
    case int32 = 0x10
    case timestamp = 0x11
    case int64 = 0x12
    case decimal128 = 0x13
    case minKey = 0xFF
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
