/// One element of an encoded BSON document, seen in place: its type, its
/// key and accessors for its value, read straight from the bytes.
///
/// Elements are handed out by ``BSONDocument/forEachElement(in:options:_:)``
/// after the element has been validated; they point into the caller's
/// bytes and are valid only inside that call's closure.
///
/// ```swift
/// try BSONDocument.forEachElement(in: bytes) { element in
///     if element.keyEquals("temperatureInFahrenheit"), let value = element.double {
///         reading.temperature = value
///     }
/// }
/// ```
public struct BSONElement {
    let bytes: UnsafeRawBufferPointer
    let keyStart: Int
    let keyEnd: Int
    /// Offset of the value (after the key's NUL) in the document's bytes.
    public let valueOffset: Int
    /// Offset one past the value.
    public let valueEnd: Int
    /// The element's type.
    public let type: BSONType
    let maxDepth: Int
    let depth: Int

    /// Whether the key equals `key`, compared byte for byte without
    /// building a String.
    public func keyEquals(_ key: String) -> Bool {
        // The length first: O(1) for native strings, and most keys differ in it.
        guard key.utf8.count == keyEnd - keyStart else { return false }
        if let result = key.utf8.withContiguousStorageIfAvailable({ keyEquals(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        var copy = key
        return copy.withUTF8 { keyEquals(UnsafeRawBufferPointer($0)) }
    }

    /// Whether the key's UTF-8 bytes equal `key`.
    public func keyEquals(_ key: UnsafeRawBufferPointer) -> Bool {
        let count = keyEnd - keyStart
        guard key.count == count else { return false }
        guard count > 0 else { return true }
        let mine = bytes.baseAddress.unsafelyUnwrapped + keyStart
        let theirs = key.baseAddress.unsafelyUnwrapped
        // Keys are short: compare words in place rather than call memcmp.
        var index = 0
        while index + 8 <= count {
            if mine.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                != theirs.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            {
                return false
            }
            index += 8
        }
        while index < count {
            if mine.load(fromByteOffset: index, as: UInt8.self) != theirs.load(fromByteOffset: index, as: UInt8.self) { return false }
            index += 1
        }
        return true
    }

    /// The key (validated UTF-8).
    public var key: String {
        String(
            decoding: UnsafeRawBufferPointer(rebasing: bytes[keyStart..<keyEnd]).assumingMemoryBound(to: UInt8.self),
            as: UTF8.self)
    }

    /// The key's UTF-8 bytes, valid only inside the closure.
    public var keyBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[keyStart..<keyEnd]) }

    /// The raw encoded value (no type byte, no key), valid only inside the closure.
    public var valueBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[valueOffset..<valueEnd]) }

    @inline(__always) func load<T: FixedWidthInteger>(_: T.Type) -> T {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: valueOffset, as: T.self))
    }

    /// The value if it is a double, else nil.
    public var double: Double? { type == .double ? Double(bitPattern: load(UInt64.self)) : nil }
    /// The value if it is an int32, else nil.
    public var int32: Int32? { type == .int32 ? load(Int32.self) : nil }
    /// The value if it is an int64, else nil.
    public var int64: Int64? { type == .int64 ? load(Int64.self) : nil }
    /// The value if it is an int32 or an int64, widened, else nil.
    public var integer: Int64? {
        switch type {
        case .int32: Int64(load(Int32.self))
        case .int64: load(Int64.self)
        default: nil
        }
    }
    /// The value if it is a boolean, else nil.
    public var bool: Bool? { type == .bool ? bytes[valueOffset] == 1 : nil }
    /// The value if it is a UTC datetime (milliseconds since 1970), else nil.
    public var datetime: Int64? { type == .datetime ? load(Int64.self) : nil }
    /// The value if it is an ObjectId, else nil.
    public var objectId: ObjectId? {
        guard type == .objectId else { return nil }
        return ObjectId(
            high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: valueOffset, as: UInt64.self)),
            low: UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: valueOffset + 8, as: UInt32.self)))
    }
    /// The value if it is a Decimal128, else nil.
    public var decimal128: Decimal128? {
        guard type == .decimal128 else { return nil }
        return Decimal128(
            high: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: valueOffset + 8, as: UInt64.self)),
            low: load(UInt64.self))
    }
    /// The value if it is a string (validated UTF-8), else nil.
    public var string: String? {
        guard type == .string else { return nil }
        // Validated during iteration: int32 length, UTF-8, NUL.
        let text = UnsafeRawBufferPointer(rebasing: bytes[(valueOffset + 4)..<(valueEnd - 1)])
        return String(decoding: text.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }
    /// Whether the value is BSON null.
    public var isNull: Bool { type == .null }

    /// The subtype byte if the value is binary data, else nil.
    public var binarySubtype: UInt8? { type == .binary ? bytes[valueOffset + 4] : nil }

    /// The length the binary value declares (for the old subtype 0x02 it
    /// includes the repeated inner length), else nil.
    public var binaryDeclaredLength: Int? { type == .binary ? Int(load(Int32.self)) : nil }

    /// The payload of a binary value as ``BSONBinary/bytes`` holds it (for the
    /// old subtype 0x02 without the inner length), else nil. Valid only inside
    /// the closure.
    public var binaryPayload: UnsafeRawBufferPointer? {
        guard type == .binary else { return nil }
        // Validated during iteration: the length fits and subtype 0x02's inner length matches.
        let skip = bytes[valueOffset + 4] == BSONBinary.Subtype.binaryOld ? 4 : 0
        return UnsafeRawBufferPointer(rebasing: bytes[(valueOffset + 5 + skip)..<valueEnd])
    }

    /// The UTF-8 bytes of a string value without its NUL, else nil. Valid
    /// only inside the closure.
    public var stringBytes: UnsafeRawBufferPointer? {
        guard type == .string else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[(valueOffset + 4)..<(valueEnd - 1)])
    }

    /// The 12 bytes of an ObjectId value, else nil. Valid only inside the closure.
    public var objectIdBytes: UnsafeRawBufferPointer? {
        guard type == .objectId else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[valueOffset..<(valueOffset + 12)])
    }

    /// The value decoded as a ``BSON`` (documents and arrays included).
    public func value() throws(BSONError) -> BSON {
        let decoder = BSONDecoder(bytes, maxDepth: maxDepth)
        var offset = valueOffset
        return try decoder.value(type: type.rawValue, at: &offset, limit: valueEnd, depth: depth)
    }
}

extension BSONDocument {
    /// Validates `bytes` as one BSON document, exactly as
    /// `BSONDocument(bson:options:)` does, and calls
    /// `body` with each top-level element in order, without building a
    /// document: the fast path for decoding typed objects.
    ///
    /// Every element is validated before `body` sees it; nested documents
    /// and arrays are validated whole. The elements point into `bytes` and
    /// must not escape the closure.
    ///
    /// ```swift
    /// var id: ObjectId?
    /// try BSONDocument.forEachElement(in: raw) { element in
    ///     if element.keyEquals("_id") { id = element.objectId }
    /// }
    /// ```
    /// - Throws: ``BSONError`` for invalid input, or what `body` throws.
    public static func forEachElement(
        in bytes: UnsafeRawBufferPointer, options: BSONDecodingOptions = BSONDecodingOptions(),
        _ body: (BSONElement) throws -> Void
    ) throws {
        let decoder = BSONDecoder(bytes, maxDepth: options.maxDepth)
        try decoder.checkTopLevelLength()
        let last = bytes.count - 1
        var offset = 4
        while offset < last {
            let typeByte = decoder.byte(at: offset)
            if typeByte == 0 { break }
            let elementOffset = offset
            offset += 1
            let keyStart = offset
            try decoder.skipCString(at: &offset, limit: last, what: "a key")
            let valueOffset = offset
            try decoder.skipValue(type: typeByte, at: &offset, limit: last, depth: 1)
            guard let type = BSONType(rawValue: typeByte) else {
                // skipValue has thrown for unknown types already.
                throw BSONError(
                    code: .invalidType, offset: elementOffset, message: "0x\(String(typeByte, radix: 16)) is not a BSON element type")
            }
            try body(
                BSONElement(
                    bytes: bytes, keyStart: keyStart, keyEnd: valueOffset - 1, valueOffset: valueOffset,
                    valueEnd: offset, type: type, maxDepth: options.maxDepth, depth: 1))
        }
        try decoder.finishDocument(at: offset, last: last)
    }

    /// ``forEachElement(in:options:_:)`` over an array of bytes.
    public static func forEachElement(
        in bytes: [UInt8], options: BSONDecodingOptions = BSONDecodingOptions(),
        _ body: (BSONElement) throws -> Void
    ) throws {
        try bytes.withUnsafeBytes { raw in try forEachElement(in: raw, options: options, body) }
    }
}

extension BSONDecoder {
    /// The top-level length checks of ``decodeTopLevel()``.
    func checkTopLevelLength() throws(BSONError) {
        let count = bytes.count
        guard count >= 5 else {
            throw BSONError(
                code: .truncated, offset: 0,
                message: "\(count) bytes cannot hold a document: a BSON document is at least 5 bytes")
        }
        let declared = Int(int32(at: 0))
        if declared < 5 {
            throw BSONError(
                code: .invalidLength, offset: 0,
                message: "the document declares \(declared) bytes; a BSON document is at least 5 bytes")
        }
        if declared > count {
            throw BSONError(
                code: .truncated, offset: count,
                message: "the document declares \(declared) bytes but only \(count) were given")
        }
        if declared < count {
            throw BSONError(
                code: .trailingBytes, offset: declared,
                message: "\(count - declared) bytes follow the \(declared)-byte document; pass exactly one document")
        }
    }

    /// Validates one value and moves past it; scalars and strings without
    /// building anything, other types through the full decoder.
    func skipValue(type: UInt8, at offset: inout Int, limit: Int, depth: Int) throws(BSONError) {
        switch type {
        case 0x01, 0x09, 0x11, 0x12:
            try need(8, at: offset, limit: limit, "an 8-byte value")
            offset += 8
        case 0x10:
            try need(4, at: offset, limit: limit, "an int32")
            offset += 4
        case 0x07:
            try need(12, at: offset, limit: limit, "an ObjectId")
            offset += 12
        case 0x13:
            try need(16, at: offset, limit: limit, "a Decimal128")
            offset += 16
        case 0x06, 0x0A, 0xFF, 0x7F:
            break
        case 0x02, 0x0D, 0x0E:
            try skipString(at: &offset, limit: limit)
        default:
            _ = try value(type: type, at: &offset, limit: limit, depth: depth)
        }
    }

    /// The checks of ``string(at:limit:what:)`` without building the String.
    func skipString(at offset: inout Int, limit: Int) throws(BSONError) {
        try need(4, at: offset, limit: limit, "a string")
        let length = Int(int32(at: offset))
        if length < 1 || length > limit - offset - 4 {
            throw BSONError(
                code: .invalidLength, offset: offset,
                message: "a string declares \(length) bytes; it needs at least 1 (the NUL) and \(max(limit - offset - 4, 0)) remain")
        }
        let start = offset + 4
        let nul = start + length - 1
        if byte(at: nul) != 0 {
            throw BSONError(
                code: .missingTerminator, offset: nul,
                message: "a string is not NUL-terminated where its length says it ends")
        }
        if !Self.isValidUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<nul])) {
            throw BSONError(code: .invalidUTF8, offset: start, message: "a string is not valid UTF-8")
        }
        offset = nul + 1
    }
}

extension BSONElement {
    /// Where this element lies in its document's bytes, to find it again
    /// later without another walk (``init(_:in:)``).
    public var span: BSONElementSpan {
        BSONElementSpan(
            start: Int32(truncatingIfNeeded: keyStart - 1), valueOffset: Int32(truncatingIfNeeded: valueOffset),
            end: Int32(truncatingIfNeeded: valueEnd))
    }

    /// The top-level element at `span` of the document `bytes`, as a
    /// validating walk (``BSONDocument/forEachElement(in:options:_:)``) of
    /// the same bytes reported it; nil if the span does not fit the bytes
    /// or names no element type. Nothing is validated again: use it only
    /// with spans taken from a walk of these exact bytes.
    ///
    /// ```swift
    /// var spans: [BSONElementSpan] = []
    /// try BSONDocument.forEachElement(in: raw) { spans.append($0.span) }
    /// let first = BSONElement(spans[0], in: raw)
    /// ```
    public init?(_ span: BSONElementSpan, in bytes: UnsafeRawBufferPointer, maxDepth: Int = BSONDecodingOptions().maxDepth) {
        guard span.fits(bytes.count), let type = BSONType(rawValue: bytes[Int(span.start)]) else { return nil }
        let start = Int(span.start)
        let valueOffset = Int(span.valueOffset)
        let end = Int(span.end)
        self.init(
            bytes: bytes, keyStart: start + 1, keyEnd: valueOffset - 1, valueOffset: valueOffset, valueEnd: end, type: type,
            maxDepth: maxDepth, depth: 1)
    }
}

/// Where one top-level element lies in its document's bytes: its type
/// byte, its value and the end of its value (``BSONElement/span``).
public struct BSONElementSpan: Sendable, Hashable {
    /// The offset of the type byte; -1 for ``absent``.
    public var start: Int32
    /// The offset of the value (after the key's NUL).
    public var valueOffset: Int32
    /// One past the value.
    public var end: Int32

    /// No element.
    public static let absent = BSONElementSpan(start: -1, valueOffset: -1, end: -1)

    /// Whether the span can be an element of a document of `count` bytes:
    /// after the length prefix, a type byte and at least a key's NUL
    /// before the value, and the value inside the document (before its
    /// final NUL). ``absent`` does not fit.
    @inlinable
    public func fits(_ count: Int) -> Bool {
        let start = Int(start)
        let valueOffset = Int(valueOffset)
        let end = Int(end)
        return start >= 4 && start + 1 < valueOffset && valueOffset <= end && end < count
    }

    /// Creates a span.
    public init(start: Int32, valueOffset: Int32, end: Int32) {
        self.start = start
        self.valueOffset = valueOffset
        self.end = end
    }
}

/// A fixed list of keys laid out in one buffer, matched against the keys of
/// ``BSONElement``s byte for byte, without building or comparing Strings:
/// the hot loop of reading typed records from their bytes.
///
/// ```swift
/// let keys = BSONKeyTable(["_id", "deviceId", "temperatureInFahrenheit"])
/// var position = 0
/// try BSONDocument.forEachElement(in: raw) { element in
///     defer { position += 1 }
///     if let index = keys.index(of: element, hint: position) { print(index) }
/// }
/// ```
public struct BSONKeyTable: Sendable {
    private let bytes: [UInt8]
    /// `starts[i]..<starts[i + 1]` holds key `i`.
    private let starts: [Int]

    /// The number of keys.
    public var count: Int { starts.count - 1 }

    /// A table of `keys`, in order.
    public init(_ keys: [String]) {
        var bytes: [UInt8] = []
        var starts = [0]
        for key in keys {
            bytes.append(contentsOf: key.utf8)
            starts.append(bytes.count)
        }
        self.bytes = bytes
        self.starts = starts
    }

    /// The index of a key equal to the element's key (`hint` if it matches,
    /// since records usually list their fields in schema order; else the
    /// first that does), or nil.
    public func index(of element: BSONElement, hint: Int) -> Int? {
        bytes.withUnsafeBytes { raw -> Int? in
            let count = starts.count - 1
            if hint >= 0 && hint < count && element.keyEquals(key(hint, in: raw)) { return hint }
            for index in 0..<count where index != hint && element.keyEquals(key(index, in: raw)) { return index }
            return nil
        }
    }

    /// Validates the document in `raw` (as ``BSONDocument/forEachElement(in:options:_:)``)
    /// and puts in `slots[i]` the first element whose key is key `i`, nil
    /// where the document has none; other elements are skipped. `slots`
    /// gets ``count`` entries; the elements point into `raw` and are valid
    /// as long as its memory is.
    ///
    /// ```swift
    /// var slots: [BSONElement?] = []
    /// try keys.collect(raw, into: &slots)
    /// let temperature = slots[2]?.double
    /// ```
    /// - Throws: ``BSONError`` for invalid input.
    public func collect(_ raw: UnsafeRawBufferPointer, into slots: inout [BSONElement?]) throws {
        let count = starts.count - 1
        if slots.count != count {
            slots = Array(repeating: nil, count: count)
        } else {
            for index in 0..<count { slots[index] = nil }
        }
        var position = 0
        try BSONDocument.forEachElement(in: raw) { element in
            defer { position += 1 }
            // Clients write fields in schema order: the same position is tried first.
            guard let index = index(of: element, hint: position), slots[index] == nil else { return }
            slots[index] = element
        }
    }

    @inline(__always)
    private func key(_ index: Int, in raw: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: raw[starts[index]..<starts[index + 1]])
    }
}
