import IngestCore

/// Writes BSON documents straight into a reused byte buffer. Typed objects
/// encode through it from their cached schema, without building a
/// `BSONDocument` first. Apps do not call it; it is public only because
/// ``PersistableValue`` requirements mention it.
public struct BSONRecordEncoder {
    /// The encoded bytes so far.
    public internal(set) var bytes: [UInt8]
    /// Resolved object types, for embedded objects and links.
    let types: TypeResolver

    init(types: TypeResolver, capacity: Int = 64 * 1024) {
        self.types = types
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Documents

    /// Starts a document; returns where its length goes.
    @inline(__always)
    mutating func beginDocument() -> Int {
        let start = bytes.count
        bytes.append(0); bytes.append(0); bytes.append(0); bytes.append(0)
        return start
    }

    /// Ends the document started at `start`: terminator and length.
    @inline(__always)
    mutating func endDocument(_ start: Int) {
        bytes.append(0)
        let length = UInt32(truncatingIfNeeded: bytes.count - start)
        bytes.withUnsafeMutableBytes { buffer in
            buffer.storeBytes(of: length.littleEndian, toByteOffset: start, as: UInt32.self)
        }
    }

    /// Writes the element header: type byte and key (with its NUL).
    @inline(__always)
    mutating func key(_ type: UInt8, _ key: EncodedKey) {
        bytes.append(type)
        bytes.append(contentsOf: key.bytes)
    }

    /// Writes the element header for an array index key.
    mutating func indexKey(_ type: UInt8, _ index: Int) {
        bytes.append(type)
        if index < 10 {
            bytes.append(UInt8(48 + index))
        } else {
            bytes.append(contentsOf: String(index).utf8)
        }
        bytes.append(0)
    }

    // MARK: Values (the header is written first)

    @inline(__always) mutating func int32(_ value: Int32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func int64(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func double(_ value: Double) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    @inline(__always) mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            int32(Int32(truncatingIfNeeded: utf8.count + 1))
            bytes.append(contentsOf: utf8)
        }
        bytes.append(0)
    }

    @inline(__always) mutating func objectId(_ value: ObjectId) {
        value.withBytes { bytes.append(contentsOf: $0) }
    }

    mutating func binary(_ subtype: UInt8, _ payload: UnsafeRawBufferPointer) {
        int32(Int32(truncatingIfNeeded: payload.count))
        bytes.append(subtype)
        bytes.append(contentsOf: payload)
    }

    mutating func decimal128(_ value: Decimal128) {
        withUnsafeBytes(of: value.low.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: value.high.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Removes everything after `count` bytes (rolls back a failed object).
    mutating func truncate(to count: Int) {
        bytes.removeSubrange(count...)
    }
}

/// BSON element type bytes.
enum BSONType {
    static let double: UInt8 = 0x01
    static let string: UInt8 = 0x02
    static let document: UInt8 = 0x03
    static let array: UInt8 = 0x04
    static let binary: UInt8 = 0x05
    static let objectId: UInt8 = 0x07
    static let bool: UInt8 = 0x08
    static let datetime: UInt8 = 0x09
    static let null: UInt8 = 0x0A
    static let int32: UInt8 = 0x10
    static let int64: UInt8 = 0x12
    static let decimal128: UInt8 = 0x13
}

/// A field name encoded once: its UTF-8 bytes and the terminating NUL.
public struct EncodedKey: Sendable {
    let bytes: [UInt8]
    let name: String

    init(_ name: String) {
        self.name = name
        bytes = Array(name.utf8) + [0]
    }
}
