import IngestCore

/// Writes BSON documents straight into a reused byte buffer. Typed objects
/// encode through it from their cached schema, without building a
/// `BSONDocument` first. Apps do not call it; it is public only because
/// ``PersistableValue`` requirements mention it.
public struct BSONRecordEncoder {
    let buffer: RecordBuffer
    /// Resolved object types, for embedded objects and links.
    let types: TypeResolver

    init(types: TypeResolver, capacity: Int = 64 * 1024) {
        self.types = types
        buffer = RecordBuffer(capacity: capacity)
    }

    /// A copy of the encoded bytes so far.
    public var bytes: [UInt8] { buffer.array }

    /// The number of encoded bytes so far.
    var count: Int { buffer.count }

    /// Calls `body` with the encoded bytes so far, without copying them.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try buffer.withUnsafeBytes(body)
    }

    // MARK: Documents

    /// Starts a document; returns where its length goes.
    @inline(__always)
    func beginDocument() -> Int {
        let start = buffer.count
        buffer.append(littleEndian: UInt32(0))
        return start
    }

    /// Ends the document started at `start`: terminator and length.
    @inline(__always)
    func endDocument(_ start: Int) {
        buffer.append(0)
        buffer.store(UInt32(truncatingIfNeeded: buffer.count - start), at: start)
    }

    /// Writes the element header: type byte and key (with its NUL).
    @inline(__always)
    func key(_ type: UInt8, _ key: EncodedKey) {
        buffer.append(type)
        key.bytes.withUnsafeBytes { buffer.append($0) }
    }

    /// Writes the element header: type byte and key, given as its UTF-8
    /// with the NUL (one capacity check for both).
    @inline(__always)
    func header(_ type: UInt8, _ key: UnsafeRawBufferPointer) {
        let target = buffer.claim(1 + key.count)
        target.storeBytes(of: type, as: UInt8.self)
        Self.copyKey(key, to: target + 1)
    }

    /// Copies a (short) key with word-sized loads and stores, the last one
    /// overlapping: a `memcpy` call costs more than the copy.
    @inline(__always)
    static func copyKey(_ key: UnsafeRawBufferPointer, to target: UnsafeMutableRawPointer) {
        let source = UnsafeRawPointer(key.baseAddress.unsafelyUnwrapped)
        let count = key.count
        func move<T: FixedWidthInteger>(_ offset: Int, _ type: T.Type) {
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: offset, as: T.self), toByteOffset: offset, as: T.self)
        }
        if count >= 8 {
            var offset = 0
            while offset + 8 < count {
                move(offset, UInt64.self)
                offset += 8
            }
            move(count - 8, UInt64.self)
        } else if count >= 4 {
            move(0, UInt32.self)
            move(count - 4, UInt32.self)
        } else if count >= 2 {
            move(0, UInt16.self)
            move(count - 2, UInt16.self)
        } else if count == 1 {
            move(0, UInt8.self)
        }
    }

    /// Writes a whole fixed-size element: type byte, key (UTF-8 with the
    /// NUL) and the little-endian value, with one capacity check.
    @inline(__always)
    func element<T: FixedWidthInteger>(_ type: UInt8, _ key: UnsafeRawBufferPointer, littleEndian value: T) {
        let target = buffer.claim(1 + key.count + MemoryLayout<T>.size)
        target.storeBytes(of: type, as: UInt8.self)
        Self.copyKey(key, to: target + 1)
        (target + 1 + key.count).storeBytes(of: value.littleEndian, as: T.self)
    }

    /// Writes the element header with a key given as a string (its UTF-8
    /// bytes and a NUL); the caller makes sure it is a valid field name.
    @inline(__always)
    func key(_ type: UInt8, name: String) {
        buffer.append(type)
        var name = name
        name.withUTF8 { buffer.append(UnsafeRawBufferPointer($0)) }
        buffer.append(0)
    }

    // MARK: Values (the header is written first)

    @inline(__always) func int32(_ value: Int32) { buffer.append(littleEndian: value) }

    @inline(__always) func int64(_ value: Int64) { buffer.append(littleEndian: value) }

    @inline(__always) func double(_ value: Double) { buffer.append(littleEndian: value.bitPattern) }

    @inline(__always) func bool(_ value: Bool) { buffer.append(value ? 1 : 0) }

    @inline(__always) func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            buffer.append(littleEndian: Int32(truncatingIfNeeded: utf8.count + 1))
            buffer.append(UnsafeRawBufferPointer(utf8))
        }
        buffer.append(0)
    }

    @inline(__always) func objectId(_ value: ObjectId) {
        value.withBytes { buffer.append($0) }
    }

    func binary(_ subtype: UInt8, _ payload: UnsafeRawBufferPointer) {
        buffer.append(littleEndian: Int32(truncatingIfNeeded: payload.count))
        buffer.append(subtype)
        buffer.append(payload)
    }

    func decimal128(_ value: Decimal128) {
        buffer.append(littleEndian: value.low)
        buffer.append(littleEndian: value.high)
    }

    /// Removes everything after `count` bytes (rolls back a failed object).
    func truncate(to count: Int) {
        buffer.truncate(to: count)
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

/// A field name encoded once: its UTF-8 bytes and the terminating NUL. A
/// class, so that passing one around costs no reference counting of its
/// parts.
public final class EncodedKey: Sendable {
    let bytes: [UInt8]
    let name: String

    init(_ name: String) {
        self.name = name
        bytes = Array(name.utf8) + [0]
    }
}
