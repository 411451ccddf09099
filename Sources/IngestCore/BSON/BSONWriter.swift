/// Writes BSON straight into a byte buffer, element by element, so typed
/// objects can be encoded without building a ``BSONDocument`` first.
///
/// The buffer is meant to be reused: encode, hand the bytes on, then
/// `removeAll(keepingCapacity: true)`.
///
/// ```swift
/// var buffer: [UInt8] = []
/// BSONWriter.withWriter(appendingTo: &buffer) { writer in
///     let start = writer.beginDocument()
///     writer.appendObjectId("_id", id)
///     writer.appendString("deviceId", "WX1278UIT")
///     writer.appendDouble("temperatureInFahrenheit", 66.7)
///     writer.endDocument(start)
/// }
/// ```
///
/// Keys are C strings in BSON: a key (or regular expression) containing a
/// NUL byte cannot be represented. The writer then writes it cut at the NUL,
/// so that the output is still well-formed BSON, and records the first such
/// problem in ``error``; ``BSONDocument/checkedBSONBytes()`` turns it into a
/// thrown ``BSONError``.
public struct BSONWriter: Sendable {
    /// The bytes written so far (including whatever the buffer held before).
    public var bytes: [UInt8]
    /// The first key or regular expression that had to be cut at a NUL
    /// byte, if any.
    public private(set) var error: BSONError?

    /// A writer appending to `bytes`.
    public init(bytes: [UInt8] = []) {
        self.bytes = bytes
        self.error = nil
    }

    /// Runs `body` with a writer that appends to `buffer` in place (the
    /// buffer is moved into the writer and back, never copied).
    public static func withWriter<R, E: Error>(
        appendingTo buffer: inout [UInt8], _ body: (inout BSONWriter) throws(E) -> R
    ) throws(E) -> R {
        var writer = BSONWriter()
        swap(&writer.bytes, &buffer)
        defer { swap(&writer.bytes, &buffer) }
        return try body(&writer)
    }

    // MARK: Documents and arrays

    /// The position of an open document, to pass to ``endDocument(_:)``.
    public struct DocumentStart: Sendable, Hashable {
        /// Offset of the document's length prefix in ``BSONWriter/bytes``.
        public let offset: Int
    }

    /// Starts a top-level document (writes a length placeholder).
    public mutating func beginDocument() -> DocumentStart {
        let start = DocumentStart(offset: bytes.count)
        appendRaw(Int32(0))
        return start
    }

    /// Starts an embedded document under `key`; fill it, then call
    /// ``endDocument(_:)``.
    public mutating func beginDocument(_ key: String) -> DocumentStart {
        appendHeader(.document, key)
        return beginDocument()
    }

    /// Starts an array under `key`. Its elements take the keys "0", "1", …:
    /// write them with ``appendKey(index:type:)``-based calls such as
    /// `appendDouble(index: 0, 1.5)` or with ``appendValue(index:_:)``.
    public mutating func beginArray(_ key: String) -> DocumentStart {
        appendHeader(.array, key)
        return beginDocument()
    }

    /// Ends the document or array started at `start`: writes the 0x00
    /// terminator and the final length.
    public mutating func endDocument(_ start: DocumentStart) {
        bytes.append(0)
        let length = Int32(truncatingIfNeeded: bytes.count - start.offset)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: length.littleEndian, toByteOffset: start.offset, as: Int32.self)
        }
    }

    // MARK: Elements

    /// Writes a double (by bit pattern: -0.0 and NaN payloads are kept).
    public mutating func appendDouble(_ key: String, _ value: Double) {
        appendHeader(.double, key)
        appendRaw(value.bitPattern)
    }

    /// Writes a UTF-8 string.
    public mutating func appendString(_ key: String, _ value: String) {
        appendHeader(.string, key)
        appendStringBody(value)
    }

    /// Writes an ObjectId.
    public mutating func appendObjectId(_ key: String, _ value: ObjectId) {
        appendHeader(.objectId, key)
        appendObjectIdBody(value)
    }

    /// Writes a boolean.
    public mutating func appendBool(_ key: String, _ value: Bool) {
        appendHeader(.bool, key)
        bytes.append(value ? 1 : 0)
    }

    /// Writes a 32-bit integer.
    public mutating func appendInt32(_ key: String, _ value: Int32) {
        appendHeader(.int32, key)
        appendRaw(value)
    }

    /// Writes a 64-bit integer.
    public mutating func appendInt64(_ key: String, _ value: Int64) {
        appendHeader(.int64, key)
        appendRaw(value)
    }

    /// Writes a UTC datetime in milliseconds since the Unix epoch.
    public mutating func appendDatetime(_ key: String, millisecondsSince1970 value: Int64) {
        appendHeader(.datetime, key)
        appendRaw(value)
    }

    /// Writes a null.
    public mutating func appendNull(_ key: String) {
        appendHeader(.null, key)
    }

    /// Writes binary data.
    public mutating func appendBinary(_ key: String, _ value: BSONBinary) {
        appendHeader(.binary, key)
        appendBinaryBody(value)
    }

    /// Writes a Decimal128.
    public mutating func appendDecimal128(_ key: String, _ value: Decimal128) {
        appendHeader(.decimal128, key)
        appendRaw(value.low)
        appendRaw(value.high)
    }

    /// Writes an embedded document.
    public mutating func appendDocument(_ key: String, _ value: BSONDocument) {
        appendHeader(.document, key)
        appendDocumentBody(value)
    }

    /// Writes any BSON value under `key`.
    public mutating func appendValue(_ key: String, _ value: BSON) {
        appendHeader(value.type, key)
        appendBody(value)
    }

    /// Writes any BSON value as array element `index` (its key is the
    /// decimal index).
    public mutating func appendValue(index: Int, _ value: BSON) {
        bytes.append(value.type.rawValue)
        appendIndexKey(index)
        appendBody(value)
    }

    /// Writes a type byte and the decimal key `index`, for an array element
    /// whose value the caller writes next with the `append…Body` methods.
    public mutating func appendKey(index: Int, type: BSONType) {
        bytes.append(type.rawValue)
        appendIndexKey(index)
    }

    /// Writes a type byte and `key`, for an element whose value the caller
    /// writes next with the `append…Body` methods.
    public mutating func appendKey(_ key: String, type: BSONType) {
        appendHeader(type, key)
    }

    // MARK: Value bodies (no type byte, no key)

    /// Writes the encoding of `value` alone, after a key written with
    /// ``appendKey(_:type:)``.
    public mutating func appendBody(_ value: BSON) {
        switch value {
        case .double(let value): appendRaw(value.bitPattern)
        case .string(let value), .javascript(let value), .symbol(let value): appendStringBody(value)
        case .document(let value): appendDocumentBody(value)
        case .array(let values):
            let start = beginDocument()
            for (index, element) in values.enumerated() {
                appendValue(index: index, element)
            }
            endDocument(start)
        case .binary(let value): appendBinaryBody(value)
        case .undefined, .null, .minKey, .maxKey: break
        case .objectId(let value): appendObjectIdBody(value)
        case .bool(let value): bytes.append(value ? 1 : 0)
        case .datetime(let value): appendRaw(value)
        case .regex(let pattern, let options):
            appendCString(pattern)
            appendCString(BSON.sortedRegexOptions(options))
        case .dbPointer(let ref, let id):
            appendStringBody(ref)
            appendObjectIdBody(id)
        case .javascriptWithScope(let code, let scope):
            let start = bytes.count
            appendRaw(Int32(0))
            appendStringBody(code)
            appendDocumentBody(scope)
            let total = Int32(truncatingIfNeeded: bytes.count - start)
            bytes.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: total.littleEndian, toByteOffset: start, as: Int32.self)
            }
        case .int32(let value): appendRaw(value)
        case .timestamp(let value): appendRaw(UInt64(value.seconds) << 32 | UInt64(value.increment))
        case .int64(let value): appendRaw(value)
        case .decimal128(let value):
            appendRaw(value.low)
            appendRaw(value.high)
        }
    }

    /// Writes a whole document (length, elements, terminator).
    public mutating func appendDocumentBody(_ document: BSONDocument) {
        let start = beginDocument()
        for field in document.fields {
            appendHeader(field.value.type, field.key)
            appendBody(field.value)
        }
        endDocument(start)
    }

    /// Writes a BSON string body: int32 length, UTF-8, NUL.
    public mutating func appendStringBody(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            appendRaw(Int32(truncatingIfNeeded: utf8.count + 1))
            bytes.append(contentsOf: utf8)
        }
        bytes.append(0)
    }

    /// Writes an ObjectId's 12 bytes.
    public mutating func appendObjectIdBody(_ value: ObjectId) {
        appendRaw(value.high.bigEndian)
        appendRaw(value.low.bigEndian)
    }

    /// Writes a binary body: int32 length, subtype, bytes (subtype 0x02
    /// gets its inner length back).
    public mutating func appendBinaryBody(_ value: BSONBinary) {
        if value.subtype == BSONBinary.Subtype.binaryOld {
            appendRaw(Int32(truncatingIfNeeded: value.bytes.count + 4))
            bytes.append(value.subtype)
            appendRaw(Int32(truncatingIfNeeded: value.bytes.count))
        } else {
            appendRaw(Int32(truncatingIfNeeded: value.bytes.count))
            bytes.append(value.subtype)
        }
        bytes.append(contentsOf: value.bytes)
    }

    // MARK: Primitives

    @inline(__always)
    mutating func appendHeader(_ type: BSONType, _ key: String) {
        bytes.append(type.rawValue)
        appendCString(key)
    }

    @inline(__always)
    mutating func appendRaw<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func appendCString(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            if let nul = utf8.firstIndex(of: 0) {
                if error == nil {
                    error = BSONError(code: .nulInCString, offset: bytes.count,
                                      message: "the key or regular expression \"\(String(decoding: utf8, as: UTF8.self).debugDescription)\" contains a NUL byte, which BSON cannot encode; it was cut at the NUL")
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[..<nul]))
            } else {
                bytes.append(contentsOf: utf8)
            }
        }
        bytes.append(0)
    }

    mutating func appendIndexKey(_ index: Int) {
        if index < 10 {
            bytes.append(UInt8(truncatingIfNeeded: index) &+ 0x30)
        } else {
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for any Int
            withUnsafeMutableBytes(of: &digits) { raw in
                var position = raw.count
                var rest = index.magnitude
                repeat {
                    position -= 1
                    raw[position] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
                    rest /= 10
                } while rest > 0
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position...]))
            }
        }
        bytes.append(0)
    }
}

extension BSONDocument {
    /// The BSON encoding of this document.
    ///
    /// ```swift
    /// let bytes = (["a": .int32(1)] as BSONDocument).bsonBytes()
    /// ```
    /// A key containing a NUL byte cannot be encoded; it is written cut at
    /// the NUL (see ``checkedBSONBytes()`` to get an error instead).
    public func bsonBytes() -> [UInt8] {
        var buffer: [UInt8] = []
        appendBSON(to: &buffer)
        return buffer
    }

    /// Appends the BSON encoding of this document to `buffer`, which is
    /// meant to be reused across documents to avoid allocations.
    ///
    /// ```swift
    /// buffer.removeAll(keepingCapacity: true)
    /// doc.appendBSON(to: &buffer)
    /// ```
    public func appendBSON(to buffer: inout [UInt8]) {
        BSONWriter.withWriter(appendingTo: &buffer) { writer in
            writer.appendDocumentBody(self)
        }
    }

    /// The BSON encoding of this document, or an error if a key or regular
    /// expression contains a NUL byte (which BSON cannot represent).
    public func checkedBSONBytes() throws(BSONError) -> [UInt8] {
        var writer = BSONWriter()
        writer.appendDocumentBody(self)
        if let error = writer.error { throw error }
        return writer.bytes
    }
}
