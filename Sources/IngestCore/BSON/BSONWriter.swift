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
    // The caller's buffer, moved in for the duration of `withWriter`. It is
    // grown in zero-filled chunks, and each append computes its size, makes
    // room once and then writes with plain stores (one uniqueness check per
    // element instead of an `Array.append` per piece). The slack past
    // `position` is cut off when the writer is done.
    private var storage: [UInt8]
    private var position: Int
    private let startPosition: Int

    /// The first key or regular expression that had to be cut at a NUL
    /// byte, if any.
    public private(set) var error: BSONError?

    private init(moving buffer: inout [UInt8]) {
        storage = []
        swap(&storage, &buffer)
        position = storage.count
        startPosition = position
        error = nil
    }

    /// Runs `body` with a writer that appends to `buffer` in place (the
    /// buffer is moved into the writer and back, never copied).
    public static func withWriter<R, E: Error>(
        appendingTo buffer: inout [UInt8], _ body: (inout BSONWriter) throws(E) -> R
    ) throws(E) -> R {
        var writer = BSONWriter(moving: &buffer)
        defer {
            if writer.storage.count > writer.position {
                writer.storage.removeSubrange(writer.position...)
            }
            swap(&writer.storage, &buffer)
        }
        return try body(&writer)
    }

    /// The number of bytes in the buffer so far (including what it held
    /// before this writer started).
    public var count: Int { position }

    // MARK: Room and raw access

    @inline(__always)
    mutating func ensure(_ size: Int) {
        if storage.count - position < size { grow(size) }
    }

    @inline(never)
    mutating func grow(_ size: Int) {
        // Grow by at least what this writer has written so far, so that
        // appending one document to a large buffer stays linear.
        var chunk = Swift.max(size, 64, position - startPosition)
        // Copied from a contiguous block of zeros: a memcpy in debug builds
        // too (filling from `repeatElement` goes element by element there).
        while chunk > 0 {
            let piece = Swift.min(chunk, zeroBlock.count)
            storage.append(contentsOf: zeroBlock[..<piece])
            chunk -= piece
        }
    }

    /// Makes room for at most `size` bytes, then lets `body` write them.
    @inline(__always)
    mutating func write(upTo size: Int, _ body: (inout UncheckedBSONEncoder) -> Void) {
        ensure(size)
        let start = position
        var problem: BSONError?
        let end = withUnsafeMutablePointer(to: &problem) { problem in
            storage.withUnsafeMutableBytes { raw in
                var encoder = UncheckedBSONEncoder(
                    base: raw.baseAddress.unsafelyUnwrapped, position: start,
                    limit: start + size, problem: problem)
                body(&encoder)
                return encoder.position
            }
        }
        position = end
        if let problem, error == nil { error = problem }
    }

    // MARK: Documents and arrays

    /// The position of an open document, to pass to ``endDocument(_:)``.
    public struct DocumentStart: Sendable, Hashable {
        /// Offset of the document's length prefix in the buffer.
        public let offset: Int
    }

    /// Starts a top-level document (writes a length placeholder).
    public mutating func beginDocument() -> DocumentStart {
        let start = DocumentStart(offset: position)
        write(upTo: 4) { $0.int32(0) }
        return start
    }

    /// Starts an embedded document under `key`; fill it, then call
    /// ``endDocument(_:)``.
    public mutating func beginDocument(_ key: String) -> DocumentStart {
        write(upTo: 2 + key.utf8.count) { $0.header(.document, key) }
        return beginDocument()
    }

    /// Starts an array under `key`; fill it with ``appendValue(index:_:)``
    /// or ``appendKey(index:type:)`` plus a body, then call
    /// ``endDocument(_:)``.
    public mutating func beginArray(_ key: String) -> DocumentStart {
        write(upTo: 2 + key.utf8.count) { $0.header(.array, key) }
        return beginDocument()
    }

    /// Ends the document or array started at `start`: writes the 0x00
    /// terminator and the final length.
    public mutating func endDocument(_ start: DocumentStart) {
        let length = Int32(truncatingIfNeeded: position + 1 - start.offset)
        write(upTo: 1) { encoder in
            encoder.byte(0)
            encoder.patchInt32(length, at: start.offset)
        }
    }

    // MARK: Elements

    /// Writes a double (by bit pattern: -0.0 and NaN payloads are kept).
    public mutating func appendDouble(_ key: String, _ value: Double) {
        write(upTo: 10 + key.utf8.count) { encoder in
            encoder.header(.double, key)
            encoder.uint64(value.bitPattern)
        }
    }

    /// Writes a UTF-8 string.
    public mutating func appendString(_ key: String, _ value: String) {
        write(upTo: 7 + key.utf8.count + value.utf8.count) { encoder in
            encoder.header(.string, key)
            encoder.string(value)
        }
    }

    /// Writes an ObjectId.
    public mutating func appendObjectId(_ key: String, _ value: ObjectId) {
        write(upTo: 14 + key.utf8.count) { encoder in
            encoder.header(.objectId, key)
            encoder.objectId(value)
        }
    }

    /// Writes a boolean.
    public mutating func appendBool(_ key: String, _ value: Bool) {
        write(upTo: 3 + key.utf8.count) { encoder in
            encoder.header(.bool, key)
            encoder.byte(value ? 1 : 0)
        }
    }

    /// Writes a 32-bit integer.
    public mutating func appendInt32(_ key: String, _ value: Int32) {
        write(upTo: 6 + key.utf8.count) { encoder in
            encoder.header(.int32, key)
            encoder.int32(value)
        }
    }

    /// Writes a 64-bit integer.
    public mutating func appendInt64(_ key: String, _ value: Int64) {
        write(upTo: 10 + key.utf8.count) { encoder in
            encoder.header(.int64, key)
            encoder.uint64(UInt64(bitPattern: value))
        }
    }

    /// Writes a UTC datetime in milliseconds since the Unix epoch.
    public mutating func appendDatetime(_ key: String, millisecondsSince1970 value: Int64) {
        write(upTo: 10 + key.utf8.count) { encoder in
            encoder.header(.datetime, key)
            encoder.uint64(UInt64(bitPattern: value))
        }
    }

    /// Writes a null.
    public mutating func appendNull(_ key: String) {
        write(upTo: 2 + key.utf8.count) { $0.header(.null, key) }
    }

    /// Writes binary data.
    public mutating func appendBinary(_ key: String, _ value: BSONBinary) {
        appendValue(key, .binary(value))
    }

    /// Writes a Decimal128.
    public mutating func appendDecimal128(_ key: String, _ value: Decimal128) {
        write(upTo: 18 + key.utf8.count) { encoder in
            encoder.header(.decimal128, key)
            encoder.uint64(value.low)
            encoder.uint64(value.high)
        }
    }

    /// Writes an embedded document.
    public mutating func appendDocument(_ key: String, _ value: BSONDocument) {
        write(upTo: 2 + key.utf8.count + value.encodedSize) { encoder in
            encoder.header(.document, key)
            encoder.document(value)
        }
    }

    /// Writes any BSON value under `key`.
    public mutating func appendValue(_ key: String, _ value: BSON) {
        write(upTo: 2 + key.utf8.count + value.encodedBodySize) { $0.element(key, value) }
    }

    /// Writes any BSON value as array element `index` (its key is the
    /// decimal index).
    public mutating func appendValue(index: Int, _ value: BSON) {
        write(upTo: 22 + value.encodedBodySize) { encoder in
            encoder.byte(value.type.rawValue)
            encoder.indexKey(index)
            encoder.body(value)
        }
    }

    /// Writes a type byte and the decimal key `index`, for an array element
    /// whose value is written next with ``appendBody(_:)``.
    public mutating func appendKey(index: Int, type: BSONType) {
        write(upTo: 22) { encoder in
            encoder.byte(type.rawValue)
            encoder.indexKey(index)
        }
    }

    /// Writes a type byte and `key`, for an element whose value is written
    /// next with ``appendBody(_:)``.
    public mutating func appendKey(_ key: String, type: BSONType) {
        write(upTo: 2 + key.utf8.count) { $0.header(type, key) }
    }

    /// Writes the encoding of `value` alone (no type byte, no key), after
    /// ``appendKey(_:type:)`` or ``appendKey(index:type:)``.
    public mutating func appendBody(_ value: BSON) {
        write(upTo: value.encodedBodySize) { $0.body(value) }
    }

    /// Writes a whole document (length, elements, terminator) with no type
    /// byte or key: a top-level document, or the body after ``appendKey(_:type:)``.
    public mutating func appendDocumentBody(_ document: BSONDocument) {
        write(upTo: document.encodedSize) { $0.document(document) }
    }
}

/// Zeros to grow buffers with.
private let zeroBlock = [UInt8](repeating: 0, count: 4096)

/// The encoder proper: plain stores into memory the caller has made room
/// for, up to `limit`. Every store is checked against `limit` first (one
/// compare per piece): when the room runs out the encoder stops writing and
/// ``overflowed`` becomes true, so that a caller can encode optimistically
/// into spare capacity and fall back to computing the exact size
/// (``BSONDocument/encodedSize``, ``BSON/encodedBodySize``) only when it
/// was too small. It never writes outside `base[0..<limit]`.
///
/// The struct is trivial (no reference-counted fields): the first
/// NUL-in-key problem goes to the caller's `problem`, so that copying the
/// encoder costs no retains.
struct UncheckedBSONEncoder {
    let base: UnsafeMutableRawPointer
    var position: Int
    /// One past the last byte the encoder may write; -1 once it overflowed.
    private(set) var limit: Int
    /// Where the first key or regular expression cut at a NUL is recorded;
    /// nil when the caller does not want to know (``BSONDocument/appendBSON(to:)``).
    let problem: UnsafeMutablePointer<BSONError?>?
    /// Added to `position` in error offsets, when `base` is not the start
    /// of the caller's buffer.
    let origin: Int
    /// ``StringRepresentation/isVerified``, read once per encoder: keys are
    /// then copied from their two words (small) or their storage (large)
    /// without a retain and release.
    let readsStringWords: Bool

    init(
        base: UnsafeMutableRawPointer, position: Int, limit: Int, problem: UnsafeMutablePointer<BSONError?>?,
        origin: Int = 0
    ) {
        self.base = base
        self.position = position
        self.limit = limit
        self.problem = problem
        self.origin = origin
        self.readsStringWords = StringRepresentation.isVerified
    }

    /// Whether a write did not fit before `limit` (the output is then
    /// incomplete and must be discarded).
    var overflowed: Bool { limit < 0 }

    /// Whether `size` more bytes fit; if not, stops all further writes.
    @inline(__always) mutating func room(_ size: Int) -> Bool {
        if _fastPath(limit - position >= size) { return true }
        limit = -1
        return false
    }

    @inline(__always) mutating func byte(_ value: UInt8) {
        guard room(1) else { return }
        base.storeBytes(of: value, toByteOffset: position, as: UInt8.self)
        position &+= 1
    }

    @inline(__always) mutating func int32(_ value: Int32) {
        guard room(4) else { return }
        base.storeBytes(of: value.littleEndian, toByteOffset: position, as: Int32.self)
        position &+= 4
    }

    @inline(__always) mutating func uint64(_ value: UInt64) {
        guard room(8) else { return }
        base.storeBytes(of: value.littleEndian, toByteOffset: position, as: UInt64.self)
        position &+= 8
    }

    @inline(__always) mutating func bytes(_ source: UnsafeRawBufferPointer) {
        let count = source.count
        guard count > 0, room(count) else { return }
        (base + position).copyMemory(from: source.baseAddress.unsafelyUnwrapped, byteCount: count)
        position &+= count
    }

    /// Writes a length prefix reserved earlier at `offset` (nothing after
    /// an overflow: the prefix itself may not have fit).
    @inline(__always) func patchInt32(_ value: Int32, at offset: Int) {
        guard limit >= 0 else { return }
        base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: Int32.self)
    }

    @inline(__always) mutating func header(_ type: BSONType, _ key: String) {
        byte(type.rawValue)
        cString(key)
    }

    @inline(__always) mutating func objectId(_ value: ObjectId) {
        guard room(12) else { return }
        base.storeBytes(of: value.high.bigEndian, toByteOffset: position, as: UInt64.self)
        base.storeBytes(of: value.low.bigEndian, toByteOffset: position + 8, as: UInt32.self)
        position &+= 12
    }

    /// int32 length (with the NUL), UTF-8, NUL.
    @inline(__always) mutating func string(_ value: borrowing String) {
        withUTF8(value) { utf8 in
            let count = utf8.count
            // Length, text and NUL checked at once.
            guard room(count + 5) else { return }
            int32(Int32(truncatingIfNeeded: count + 1))
            if let source = utf8.baseAddress {
                if count <= 64 {
                    _ = Self.copyShort(from: UnsafeRawPointer(source), to: base + position, count: count)
                } else {
                    (base + position).copyMemory(from: source, byteCount: count)
                }
            }
            position &+= count
            byte(0)
        }
    }

    /// Keys and regular expressions: the UTF-8 and a NUL. A NUL inside
    /// cannot be encoded: the text is cut there and ``error`` records it.
    @inline(__always) mutating func cString(_ text: borrowing String) {
        withUTF8(text) { utf8 in cString(utf8: utf8.baseAddress.map(UnsafeRawPointer.init), count: utf8.count) }
    }

    /// ``cString(_:)`` for the `count` bytes of UTF-8 at `source`.
    @inline(__always) mutating func cString(utf8 source: UnsafeRawPointer?, count: Int) {
        // Text and NUL checked at once.
        guard room(count + 1) else { return }
        if let source, Self.copyShort(from: source, to: base + position, count: count) {
            cutAtNul(UnsafeBufferPointer(start: source.assumingMemoryBound(to: UInt8.self), count: count))
        } else {
            position &+= count
        }
        byte(0)
    }

    /// A key, read in place from the `String` at `address` (a field's key,
    /// which the document keeps alive): the same bytes ``cString(_:)``
    /// writes, without copying the string.
    @inline(__always) mutating func key(at address: UnsafeRawPointer) {
        if readsStringWords {
            let first = address.load(as: UInt64.self)
            let second = address.load(fromByteOffset: 8, as: UInt64.self)
            if let small = StringRepresentation.smallWords(first, second) {
                // Both words stored (16 bytes, then the NUL over the 16th or
                // earlier): no per-length copy. A small string's unused
                // bytes are zero, so its first zero byte is at its count,
                // unless the key holds a NUL, which the general path cuts.
                if _fastPath(limit &- position >= 17) {
                    if _fastPath(BSONDecoder.firstZeroByte(small.first, small.second) == small.count) {
                        base.storeBytes(of: small.first, toByteOffset: position, as: UInt64.self)
                        base.storeBytes(of: small.second, toByteOffset: position &+ 8, as: UInt64.self)
                        position &+= small.count
                        base.storeBytes(of: 0, toByteOffset: position, as: UInt8.self)
                        position &+= 1
                        return
                    }
                }
            } else if let large = StringRepresentation.largeUTF8(words: (first, second)) {
                cString(utf8: large.start, count: large.count)
                return
            }
        }
        cString(address.assumingMemoryBound(to: String.self).pointee)
    }

    /// The rare path of ``cString(_:)``: writes `utf8` up to its first NUL
    /// and records the problem.
    @inline(never)
    mutating func cutAtNul(_ utf8: UnsafeBufferPointer<UInt8>) {
        let nul = BSONDecoder.firstNul(in: UnsafeRawPointer(utf8.baseAddress.unsafelyUnwrapped), count: utf8.count) ?? utf8.count
        if let problem, problem.pointee == nil {
            problem.pointee = BSONError(
                code: .nulInCString, offset: origin + position,
                message:
                    "the key or regular expression \(String(decoding: utf8, as: UTF8.self).debugDescription) contains a NUL byte, which BSON cannot encode; it was cut at the NUL"
            )
        }
        bytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[..<nul])))
    }

    /// Copies `count` bytes eight at a time (overlapping the last word
    /// instead of finishing byte by byte): keys and short strings are
    /// cheaper to copy inline than through a `memcpy` call. Returns whether
    /// the bytes contain a NUL, which it finds on the way.
    @inline(__always)
    static func copyShort(from source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int) -> Bool {
        if count >= 8 {
            if count > 64 {
                destination.copyMemory(from: source, byteCount: count)
                return BSONDecoder.firstNul(in: source, count: count) != nil
            }
            var found: UInt64 = 0
            var index = 0
            while index + 8 <= count {
                let word = source.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                destination.storeBytes(of: word, toByteOffset: index, as: UInt64.self)
                found |= BSONDecoder.zeroBytes(word)
                index += 8
            }
            if index < count {
                let word = source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                destination.storeBytes(of: word, toByteOffset: count - 8, as: UInt64.self)
                found |= BSONDecoder.zeroBytes(word)
            }
            return found != 0
        }
        if count >= 4 {
            let first = source.loadUnaligned(as: UInt32.self)
            let last = source.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            destination.storeBytes(of: first, as: UInt32.self)
            destination.storeBytes(of: last, toByteOffset: count - 4, as: UInt32.self)
            return BSONDecoder.zeroBytes(UInt64(first) << 32 | UInt64(last)) != 0
        }
        var found = false
        for index in 0..<count {
            let byte = source.load(fromByteOffset: index, as: UInt8.self)
            destination.storeBytes(of: byte, toByteOffset: index, as: UInt8.self)
            found = found || byte == 0
        }
        return found
    }

    /// Copies `count` bytes: short ones inline through ``copyShort(from:to:count:)``,
    /// long ones through `memcpy`.
    @inline(__always)
    static func copy(from source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int) {
        if count <= 64 {
            _ = copyShort(from: source, to: destination, count: count)
        } else {
            destination.copyMemory(from: source, byteCount: count)
        }
    }

    /// The UTF-8 of `text`, without copying native strings.
    @inline(__always) func withUTF8<R>(_ text: borrowing String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = copy text
        return copy.withUTF8(body)
    }

    mutating func indexKey(_ index: Int) {
        if index >= 0 && index < 10 {
            byte(UInt8(truncatingIfNeeded: index) &+ 0x30)
        } else {
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for any Int
            withUnsafeMutableBytes(of: &digits) { raw in
                var start = raw.count
                var rest = index.magnitude
                repeat {
                    start -= 1
                    raw[start] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
                    rest /= 10
                } while rest > 0
                if index < 0 {
                    start -= 1
                    raw[start] = UInt8(ascii: "-")
                }
                bytes(UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
        }
        byte(0)
    }

    mutating func document(_ document: borrowing BSONDocument) {
        let start = position
        int32(0)
        // Through `pointee`, which borrows: subscripting the buffer would
        // copy each field (retains and an outlined copy of the enum).
        document.withFields { fields in
            guard var field = fields.baseAddress else { return }
            let end = field + fields.count
            while field < end {
                // Room for the type byte, which the body's switch fills in
                // (one switch per element); the key on its own, so that it
                // is not kept (retained) across the body.
                guard room(1) else { return }
                let typeAt = position
                position &+= 1
                key(at: UnsafeRawPointer(field) + BSONFieldBuffer.keyOffset)
                body(field.pointee.value, typeAt: typeAt)
                field += 1
            }
        }
        byte(0)
        patchInt32(Int32(truncatingIfNeeded: position - start), at: start)
    }

    /// Type byte, key, body: one switch per element.
    mutating func element(_ key: borrowing String, _ value: borrowing BSON) {
        guard room(1) else { return }
        let typeAt = position
        position &+= 1
        cString(key)
        body(value, typeAt: typeAt)
    }

    /// Stores the type byte at `typeAt`, a byte reserved before the key
    /// (always inside the room), unless it is -1 (a body alone).
    @inline(__always) func tag(_ type: BSONType, _ typeAt: Int) {
        if typeAt >= 0 { base.storeBytes(of: type.rawValue, toByteOffset: typeAt, as: UInt8.self) }
    }

    /// The value's encoding without type byte and key; with `typeAt` other
    /// than -1 the type byte is stored there too (from the same switch).
    /// Inlined into the element loops: called through a function the value
    /// is first copied whole (an outlined copy switching over every case).
    @inline(__always)
    mutating func body(_ value: borrowing BSON, typeAt: Int = -1) {
        switch value {
        case .double(let value):
            tag(.double, typeAt)
            uint64(value.bitPattern)
        case .string(let value):
            tag(.string, typeAt)
            string(value)
        case .objectId(let value):
            tag(.objectId, typeAt)
            objectId(value)
        case .int64(let value):
            tag(.int64, typeAt)
            uint64(UInt64(bitPattern: value))
        case .int32(let value):
            tag(.int32, typeAt)
            int32(value)
        case .bool(let value):
            tag(.bool, typeAt)
            byte(value ? 1 : 0)
        case .datetime(let value):
            tag(.datetime, typeAt)
            uint64(UInt64(bitPattern: value))
        case .null:
            tag(.null, typeAt)
        case .document(let value):
            tag(.document, typeAt)
            document(value)
        case .array(let values):
            tag(.array, typeAt)
            array(values)
        default:
            otherBody(value, typeAt: typeAt)
        }
    }

    /// ``body(_:typeAt:)`` for the types records rarely hold (kept out of line).
    @inline(never)
    mutating func otherBody(_ value: borrowing BSON, typeAt: Int) {
        tag(value.type, typeAt)
        switch value {
        case .double, .string, .objectId, .int64, .int32, .bool, .datetime, .null, .document, .array:
            // Handled by body(_:typeAt:).
            body(value)
        case .javascript(let value), .symbol(let value): string(value)
        case .binary(let value):
            if value.subtype == BSONBinary.Subtype.binaryOld {
                // The old subtype repeats the length inside the payload.
                int32(Int32(truncatingIfNeeded: value.bytes.count + 4))
                byte(value.subtype)
                int32(Int32(truncatingIfNeeded: value.bytes.count))
            } else {
                int32(Int32(truncatingIfNeeded: value.bytes.count))
                byte(value.subtype)
            }
            value.bytes.withUnsafeBytes { bytes($0) }
        case .undefined, .minKey, .maxKey: break
        case .regex(let pattern, let options):
            cString(pattern)
            cString(BSON.sortedRegexOptions(options))
        case .dbPointer(let ref, let id):
            string(ref)
            objectId(id)
        case .javascriptWithScope(let code, let scope):
            let start = position
            int32(0)
            string(code)
            document(scope)
            patchInt32(Int32(truncatingIfNeeded: position - start), at: start)
        case .timestamp(let value): uint64(UInt64(value.seconds) << 32 | UInt64(value.increment))
        case .decimal128(let value):
            uint64(value.low)
            uint64(value.high)
        }
    }

    mutating func array(_ values: borrowing [BSON]) {
        let start = position
        int32(0)
        values.withUnsafeBufferPointer { values in
            guard let first = values.baseAddress else { return }
            for index in values.indices {
                guard room(1) else { return }
                let typeAt = position
                position &+= 1
                indexKey(index)
                body((first + index).pointee, typeAt: typeAt)
            }
        }
        byte(0)
        patchInt32(Int32(truncatingIfNeeded: position - start), at: start)
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
        encode(appendingTo: &buffer, problem: nil)
    }

    /// The BSON encoding of this document, or an error if a key or regular
    /// expression contains a NUL byte (which BSON cannot represent).
    public func checkedBSONBytes() throws(BSONError) -> [UInt8] {
        var buffer: [UInt8] = []
        var problem: BSONError?
        withUnsafeMutablePointer(to: &problem) { encode(appendingTo: &buffer, problem: $0) }
        if let problem { throw problem }
        return buffer
    }

    /// Appends the encoding to `buffer`: the exact size first, then plain
    /// stores into the array's new (uninitialized) capacity, so the array
    /// is neither zero-filled nor checked per byte. The first key or
    /// regular expression that had to be cut at a NUL goes to `problem`
    /// (when given).
    func encode(appendingTo buffer: inout [UInt8], problem: UnsafeMutablePointer<BSONError?>?) {
        // A reused buffer usually has room already: encode straight into
        // its spare capacity, which saves the size pass. Only if the
        // document does not fit is the exact size computed and the
        // encoding done again.
        let spare = buffer.capacity - buffer.count
        if spare >= 5 && encode(appendingTo: &buffer, room: spare, problem: problem) { return }
        problem?.pointee = nil
        let fitted = encode(appendingTo: &buffer, room: encodedSize, problem: problem)
        assert(fitted, "BSON size computed too small")
    }

    /// Encodes into `room` bytes of new capacity at the end of `buffer`;
    /// keeps the bytes and returns true if the document fit, else leaves
    /// `buffer` as it was and returns false.
    @inline(__always)
    private func encode(appendingTo buffer: inout [UInt8], room: Int, problem: UnsafeMutablePointer<BSONError?>?) -> Bool {
        let origin = buffer.count
        var fitted = false
        buffer.append(addingCapacity: room) { span in
            span.withUnsafeMutableBufferPointer { memory, initialized in
                var encoder = UncheckedBSONEncoder(
                    base: UnsafeMutableRawPointer(memory.baseAddress.unsafelyUnwrapped),
                    position: 0, limit: room, problem: problem, origin: origin)
                encoder.document(self)
                fitted = !encoder.overflowed
                initialized = fitted ? encoder.position : 0
            }
        }
        return fitted
    }

    /// The size of this document's encoding in bytes (an upper bound if a
    /// key must be cut at a NUL).
    var encodedSize: Int {
        // Through the buffer: reading `fields[i]` would copy each value.
        withFields { fields in
            var size = 5
            guard var field = fields.baseAddress else { return size }
            let end = field + fields.count
            while field < end {
                size += 2 + field.pointee.key.utf8.count + field.pointee.value.encodedBodySize
                field += 1
            }
            return size
        }
    }
}

extension BSON {
    /// The size of this value's encoding without type byte and key.
    var encodedBodySize: Int {
        switch self {
        case .double, .datetime, .int64, .timestamp: 8
        case .string(let value), .javascript(let value), .symbol(let value): 5 + value.utf8.count
        case .document(let value): value.encodedSize
        case .array(let values):
            values.withUnsafeBufferPointer { values in
                guard let first = values.baseAddress else { return 5 }
                return values.indices.reduce(5) { size, index in
                    size + 2 + Self.decimalDigits(index) + (first + index).pointee.encodedBodySize
                }
            }
        case .binary(let value): 5 + value.bytes.count + (value.subtype == BSONBinary.Subtype.binaryOld ? 4 : 0)
        case .undefined, .null, .minKey, .maxKey: 0
        case .objectId: 12
        case .bool: 1
        case .regex(let pattern, let options): pattern.utf8.count + options.utf8.count + 2
        case .dbPointer(let ref, _): 5 + ref.utf8.count + 12
        case .javascriptWithScope(let code, let scope): 4 + 5 + code.utf8.count + scope.encodedSize
        case .int32: 4
        case .decimal128: 16
        }
    }

    static func decimalDigits(_ value: Int) -> Int {
        var digits = 1
        var rest = value.magnitude
        while rest >= 10 { rest /= 10; digits += 1 }
        return digits
    }
}
