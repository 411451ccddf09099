/// Limits applied while decoding BSON.
///
/// ```swift
/// let doc = try BSONDocument(bson: bytes, options: BSONDecodingOptions(maxDepth: 20))
/// ```
public struct BSONDecodingOptions: Sendable, Hashable {
    /// The deepest nesting of documents, arrays and code-with-scope scopes
    /// accepted; the top-level document is depth 1. Deeper input throws
    /// ``BSONError/Code/depthLimitExceeded``. Default 100 (MongoDB's own
    /// limit). Values above ``depthCeiling`` act as ``depthCeiling``: the
    /// decoder recurses (as does freeing a nested value), so the limit is
    /// what keeps hostile input from exhausting a thread's stack.
    public var maxDepth: Int = 100

    /// The highest effective ``maxDepth``: 1000.
    public static let depthCeiling = 1000

    /// Creates options; every argument has its documented default.
    public init(maxDepth: Int = 100) {
        self.maxDepth = maxDepth
    }
}

extension BSONDocument {
    /// Decodes and fully validates one BSON document that fills `bytes`
    /// exactly.
    ///
    /// Every declared length, terminator, type byte, boolean and UTF-8
    /// string is checked; bytes after the document are an error. The decoder
    /// never reads outside `bytes`, whatever they contain.
    ///
    /// ```swift
    /// let doc = try BSONDocument(bson: [0x05, 0x00, 0x00, 0x00, 0x00])  // {}
    /// ```
    /// - Throws: ``BSONError`` with the code and byte offset of the problem.
    public init(bson bytes: borrowing [UInt8], options: BSONDecodingOptions = BSONDecodingOptions()) throws(BSONError) {
        // withUnsafeBytes rethrows untyped errors: carry the typed one out.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(BSONError) -> BSONDocument in try BSONDocument(bson: raw, options: options) }
        }
        self = try result.get()
    }

    /// Decodes and fully validates one BSON document that fills `bytes`
    /// exactly, as the `[UInt8]` variant does; no copy is made.
    public init(bson bytes: UnsafeRawBufferPointer, options: BSONDecodingOptions = BSONDecodingOptions()) throws(BSONError) {
        let decoder = BSONDecoder(bytes, maxDepth: options.maxDepth)
        self = try decoder.decodeTopLevel()
    }

    /// Decodes one BSON document from a slice, which it must fill exactly.
    public init(bson bytes: borrowing ArraySlice<UInt8>, options: BSONDecodingOptions = BSONDecodingOptions()) throws(BSONError) {
        // withUnsafeBytes rethrows untyped errors: carry the typed one out.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(BSONError) -> BSONDocument in try BSONDocument(bson: raw, options: options) }
        }
        self = try result.get()
    }
}

/// The validating BSON decoder. Works on raw memory with an explicit limit
/// for every read: each read is preceded by a check against the end of the
/// enclosing document, so no input can make it read out of bounds.
struct BSONDecoder {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    /// ``StringRepresentation/isVerified``, read once per document rather
    /// than once per string.
    let buildsSmallStrings: Bool

    init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = min(maxDepth, BSONDecodingOptions.depthCeiling)
        self.buildsSmallStrings = StringRepresentation.isVerified
    }

    // MARK: Top level

    func decodeTopLevel() throws(BSONError) -> BSONDocument {
        try checkTopLevelLength()
        var position = 0
        return try document(at: &position, limit: bytes.count, depth: 1)
    }

    // MARK: Raw reads (callers check bounds first)

    @inline(__always) func byte(at offset: Int) -> UInt8 {
        bytes.load(fromByteOffset: offset, as: UInt8.self)
    }

    @inline(__always) func int32(at offset: Int) -> Int32 {
        Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self))
    }

    @inline(__always) func uint64(at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always) func need(_ size: Int, at offset: Int, limit: Int, _ what: @autoclosure () -> String) throws(BSONError) {
        if size > limit - offset {
            throw BSONError(
                code: .truncated, offset: offset,
                message: "\(what()) needs \(size) bytes but only \(max(limit - offset, 0)) remain in the enclosing document")
        }
    }

    // MARK: Documents

    /// Reads the length prefix at `position` and checks that the document
    /// fits before `limit`. Returns the offset one past its terminator.
    @inline(__always)
    func documentEnd(at position: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        try need(5, at: position, limit: limit, "an embedded document")
        if depth > maxDepth {
            throw BSONError(
                code: .depthLimitExceeded, offset: position,
                message:
                    "documents are nested deeper than the limit of \(maxDepth) (BSONDecodingOptions.maxDepth, at most \(BSONDecodingOptions.depthCeiling))"
            )
        }
        let declared = Int(int32(at: position))
        if declared < 5 {
            throw BSONError(
                code: .invalidLength, offset: position,
                message: "a document declares \(declared) bytes; a BSON document is at least 5 bytes")
        }
        if declared > limit - position {
            throw BSONError(
                code: .invalidLength, offset: position,
                message: "a document declares \(declared) bytes but only \(limit - position) remain in the enclosing document")
        }
        return position + declared
    }

    /// Checks that the element list ended exactly at the terminator.
    @inline(__always)
    func finishDocument(at position: Int, last: Int) throws(BSONError) {
        // The element loop stops at `last` or at a 0x00 type byte.
        if position != last {
            throw BSONError(
                code: .invalidLength, offset: position,
                message: "the document ends at byte \(position) but its length says it ends at byte \(last)")
        }
        if byte(at: last) != 0 {
            throw BSONError(
                code: .missingTerminator, offset: last,
                message: "a document does not end with 0x00 (found 0x\(String(byte(at: last), radix: 16)))")
        }
    }

    func document(at position: inout Int, limit: Int, depth: Int) throws(BSONError) -> BSONDocument {
        let end = try documentEnd(at: position, limit: limit, depth: depth)
        let last = end - 1
        // A cheap guess from the size avoids regrowing for typical records.
        var buffer = BSONFieldBuffer.make(capacity: min((end - position) / 12 + 1, 64))
        var fields = buffer.fields
        var count = 0
        var keyCache: Unmanaged<BSONKeyCache>?  // looked up at the first long key
        var offset = position + 4
        while offset < last {
            let type = byte(at: offset)
            if type == 0 { break }
            offset += 1
            let key: String
            if let known = knownKey(at: &offset, limit: last, cache: &keyCache) {
                key = known
            } else {
                key = try self.key(at: &offset, limit: last, cache: &keyCache)
            }
            let value = try self.value(type: type, at: &offset, limit: last, depth: depth)
            if _slowPath(count == buffer.fieldCapacity) {
                buffer = buffer.moving(toCapacity: count * 2)
                fields = buffer.fields
            }
            // Initialized in place; the count follows each field, so that a
            // throw later frees exactly the fields made so far.
            (fields + count).initialize(to: BSONDocument.Field(key: key, value: value))
            count += 1
            buffer.count = count
        }
        try finishDocument(at: offset, last: last)
        position = end
        return BSONDocument(buffer: buffer)
    }

    func array(at position: inout Int, limit: Int, depth: Int) throws(BSONError) -> [BSON] {
        let end = try documentEnd(at: position, limit: limit, depth: depth)
        let last = end - 1
        var values: [BSON] = []
        values.reserveCapacity(min((end - position) / 8 + 1, 64))
        var offset = position + 4
        while offset < last {
            let type = byte(at: offset)
            if type == 0 { break }
            offset += 1
            // Array keys are "0", "1", …; other keys are accepted (as other
            // decoders do) and replaced by the index when re-encoding.
            try skipCString(at: &offset, limit: last, what: "an array index")
            values.append(try value(type: type, at: &offset, limit: last, depth: depth))
        }
        try finishDocument(at: offset, last: last)
        position = end
        return values
    }

    // MARK: Values

    // Inlined into the element loops: returned through memory, the 41-byte
    // enum costs a copy per value. `@_transparent` because the optimizer
    // does not honour `@inline(__always)` here (the loops are large).
    @_transparent
    func value(type: UInt8, at offset: inout Int, limit: Int, depth: Int) throws(BSONError) -> BSON {
        switch type {
        case 0x01:
            try need(8, at: offset, limit: limit, "a double")
            let bits = uint64(at: offset)
            offset += 8
            return .double(Double(bitPattern: bits))
        case 0x02:
            if buildsSmallStrings, let text = smallASCIIString(at: &offset, limit: limit) { return .string(text) }
            return .string(try string(at: &offset, limit: limit, what: "a string"))
        case 0x03, 0x04:
            return try container(type: type, at: &offset, limit: limit, depth: depth + 1)
        case 0x05:
            return .binary(try binary(at: &offset, limit: limit))
        case 0x06:
            return .undefined
        case 0x07:
            try need(12, at: offset, limit: limit, "an ObjectId")
            let id = objectId(at: offset)
            offset += 12
            return .objectId(id)
        case 0x08:
            try need(1, at: offset, limit: limit, "a boolean")
            let value = byte(at: offset)
            guard value <= 1 else {
                throw BSONError(
                    code: .invalidBoolean, offset: offset,
                    message: "a boolean is 0x\(String(value, radix: 16)); only 0x00 and 0x01 are valid")
            }
            offset += 1
            return .bool(value == 1)
        case 0x09:
            try need(8, at: offset, limit: limit, "a datetime")
            let value = Int64(bitPattern: uint64(at: offset))
            offset += 8
            return .datetime(value)
        case 0x0A:
            return .null
        case 0x0B:
            let pattern = try cString(at: &offset, limit: limit, what: "a regular expression")
            let options = try cString(at: &offset, limit: limit, what: "regular expression options")
            return .regex(pattern: pattern, options: BSON.sortedRegexOptions(options))
        case 0x0C:
            let ref = try string(at: &offset, limit: limit, what: "a DBPointer namespace")
            try need(12, at: offset, limit: limit, "a DBPointer id")
            let id = objectId(at: offset)
            offset += 12
            return .dbPointer(ref: ref, id: id)
        case 0x0D:
            return .javascript(try string(at: &offset, limit: limit, what: "JavaScript code"))
        case 0x0E:
            return .symbol(try string(at: &offset, limit: limit, what: "a symbol"))
        case 0x0F:
            return try codeWithScope(at: &offset, limit: limit, depth: depth)
        case 0x10:
            try need(4, at: offset, limit: limit, "an int32")
            let value = int32(at: offset)
            offset += 4
            return .int32(value)
        case 0x11:
            try need(8, at: offset, limit: limit, "a timestamp")
            let raw = uint64(at: offset)
            offset += 8
            return .timestamp(
                BSONTimestamp(
                    seconds: UInt32(truncatingIfNeeded: raw >> 32),
                    increment: UInt32(truncatingIfNeeded: raw)))
        case 0x12:
            try need(8, at: offset, limit: limit, "an int64")
            let value = Int64(bitPattern: uint64(at: offset))
            offset += 8
            return .int64(value)
        case 0x13:
            try need(16, at: offset, limit: limit, "a Decimal128")
            let low = uint64(at: offset)
            let high = uint64(at: offset + 8)
            offset += 16
            return .decimal128(Decimal128(high: high, low: low))
        case 0xFF:
            return .minKey
        case 0x7F:
            return .maxKey
        default:
            throw BSONError(
                code: .invalidType, offset: offset - 1,
                message: "0x\(String(type, radix: 16)) is not a BSON element type")
        }
    }

    /// An embedded document or array. Out of line, so that the recursion
    /// goes through here and ``value(type:at:limit:depth:)`` can be inlined
    /// into the element loops.
    @inline(never)
    func container(type: UInt8, at offset: inout Int, limit: Int, depth: Int) throws(BSONError) -> BSON {
        type == 0x03
            ? .document(try document(at: &offset, limit: limit, depth: depth))
            : .array(try array(at: &offset, limit: limit, depth: depth))
    }

    @inline(__always) func objectId(at offset: Int) -> ObjectId {
        ObjectId(
            high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
            low: UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)))
    }

    func binary(at offset: inout Int, limit: Int) throws(BSONError) -> BSONBinary {
        try need(5, at: offset, limit: limit, "binary data")
        let length = Int(int32(at: offset))
        if length < 0 || length > limit - offset - 5 {
            throw BSONError(
                code: .invalidLength, offset: offset,
                message: "binary data declares \(length) bytes but \(limit - offset - 5) remain in the enclosing document")
        }
        let subtype = byte(at: offset + 4)
        var start = offset + 5
        var count = length
        if subtype == BSONBinary.Subtype.binaryOld {
            // The old subtype repeats the length inside the payload; the
            // value keeps only the payload, the encoder writes it back.
            let inner = length >= 4 ? Int(int32(at: start)) : nil
            guard let inner, inner == length - 4 else {
                throw BSONError(
                    code: .invalidLength, offset: start,
                    message:
                        "binary subtype 0x02 declares an inner length of \(inner.map(String.init) ?? "nothing") for a \(length)-byte payload (expected \(length - 4))"
                )
            }
            start += 4
            count -= 4
        }
        let payload = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
        offset += 5 + length
        return BSONBinary(subtype: subtype, bytes: payload)
    }

    @inline(never)
    func codeWithScope(at offset: inout Int, limit: Int, depth: Int) throws(BSONError) -> BSON {
        try need(4, at: offset, limit: limit, "code with scope")
        let start = offset
        let total = Int(int32(at: start))
        // int32 total + string (int32 + at least the NUL) + empty document.
        if total < 14 || total > limit - start {
            throw BSONError(
                code: .invalidLength, offset: start,
                message: "code with scope declares \(total) bytes; it needs at least 14 and \(limit - start) remain")
        }
        let end = start + total
        var position = start + 4
        let code = try string(at: &position, limit: end, what: "the code of code with scope")
        let scope = try document(at: &position, limit: end, depth: depth + 1)
        if position != end {
            throw BSONError(
                code: .invalidLength, offset: start,
                message: "code with scope declares \(total) bytes but its code and scope take \(position - start)")
        }
        offset = end
        return .javascriptWithScope(code: code, scope: scope)
    }

    // MARK: Strings

    /// A BSON string: int32 length (including the NUL), UTF-8, NUL.
    func string(at offset: inout Int, limit: Int, what: @autoclosure () -> String) throws(BSONError) -> String {
        try need(4, at: offset, limit: limit, what())
        let length = Int(int32(at: offset))
        if length < 1 || length > limit - offset - 4 {
            throw BSONError(
                code: .invalidLength, offset: offset,
                message: "\(what()) declares \(length) bytes; it needs at least 1 (the NUL) and \(max(limit - offset - 4, 0)) remain")
        }
        let start = offset + 4
        let nul = start + length - 1
        if byte(at: nul) != 0 {
            throw BSONError(
                code: .missingTerminator, offset: nul,
                message: "\(what()) is not NUL-terminated where its length says it ends")
        }
        // The length is known: no scan for the NUL (embedded NULs are
        // valid in BSON strings), only the UTF-8 check.
        let text = try utf8(from: start, to: nul, what: what())
        offset = nul + 1
        return text
    }

    /// The usual string value, ASCII of at most 15 bytes, checked and built
    /// from two word loads; nil (and `offset` unchanged) for any other, or
    /// for one that is invalid, for ``string(at:limit:what:)`` to decode or
    /// reject with the precise error.
    @inline(__always)
    func smallASCIIString(at offset: inout Int, limit: Int) -> String? {
        guard limit &- offset >= 4 else { return nil }
        let length = Int(int32(at: offset))  // with the NUL
        let start = offset &+ 4
        guard length >= 1, length <= StringRepresentation.smallCapacity &+ 1, length <= limit &- start,
            bytes.count &- start >= 16, byte(at: start &+ length &- 1) == 0
        else { return nil }
        let (first, second) = words(at: start)
        guard let text = StringRepresentation.smallASCII(maskingWords: first, second, count: length &- 1) else { return nil }
        offset = start &+ length
        return text
    }

    /// The 16 bytes at `offset` as two little-endian words (the caller
    /// checks that 16 bytes are left in the input).
    @inline(__always)
    func words(at offset: Int) -> (UInt64, UInt64) {
        (
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt64.self))
        )
    }

    /// A C string (regular expression parts): UTF-8 up to a NUL before
    /// `limit`. Keys take ``key(at:limit:)``, the same checks.
    func cString(at offset: inout Int, limit: Int, what: @autoclosure () -> String) throws(BSONError) -> String {
        let start = offset
        let (text, _) = try cStringBytes(at: &offset, limit: limit, what: what())
        return string(validated: text, at: start)
    }

    /// An element's key the usual way: from the key's first two words, a
    /// short ASCII key is those words, and a long key seen before is found
    /// in this thread's ``BSONKeyCache`` by them and confirmed by comparing
    /// its bytes and the NUL after them. Nil (and `offset` unchanged) for
    /// anything else, or when fewer than 16 bytes are left to load, for
    /// ``key(at:limit:cache:)`` to decode or reject.
    ///
    /// `cache` is the thread's key cache, looked up at the first long key
    /// and kept by the caller for the document's other keys.
    ///
    /// `@_transparent`, as ``value(type:at:limit:depth:)``: the optimizer
    /// declines `@inline(__always)` into the element loop, and an
    /// out-of-line call per key (spills, a stack check) shows in the
    /// decoder's instruction count (Benchmarks/README.md).
    @_transparent
    func knownKey(at offset: inout Int, limit: Int, cache: inout Unmanaged<BSONKeyCache>?) -> String? {
        let start = offset
        guard buildsSmallStrings && bytes.count &- start >= 16 else { return nil }
        let (first, second) = words(at: start)
        let length = Self.firstZeroByte(first, second)
        if length < 16 {
            // The NUL is within 16 bytes: a short key, which must end inside
            // the document (before its terminator) and be ASCII.
            guard length < limit &- start,
                let key = StringRepresentation.smallASCII(maskingWords: first, second, count: length)
            else { return nil }
            offset = start &+ length &+ 1
            return key
        }
        let base = bytes.baseAddress.unsafelyUnwrapped + start
        guard
            let (key, length) = Self.keyCache(&cache)._withUnsafeGuaranteedRef({
                $0.interned(startingWith: first, second, at: base, before: limit &- start)
            })
        else { return nil }
        offset = start &+ length &+ 1
        return key
    }

    /// An element's key: a C string, of which a long one comes from this
    /// thread's ``BSONKeyCache`` (keys repeat from record to record). The
    /// general path, which scans, validates and reports errors; the usual
    /// keys take ``knownKey(at:limit:cache:)`` first.
    @inline(never)
    func key(at offset: inout Int, limit: Int, cache: inout Unmanaged<BSONKeyCache>?) throws(BSONError) -> String {
        let start = offset
        let (text, ascii) = try cStringBytes(at: &offset, limit: limit, what: "a key")
        let length = text.count
        if length >= BSONKeyCache.minKeyLength && length <= BSONKeyCache.maxKeyLength {
            return Self.keyCache(&cache)._withUnsafeGuaranteedRef { $0.string(validated: text, isASCII: ascii) }
        }
        return string(validated: text, at: start)
    }

    /// A high bit for each zero byte of `word` (none if there is none;
    /// exact for the lowest one, later ones may be false).
    @inline(__always) static func zeroBytes(_ word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
    }

    /// The index of the first zero byte in the 16 bytes `first`, `second`
    /// (little-endian words), or 16 when there is none.
    @inline(__always) static func firstZeroByte(_ first: UInt64, _ second: UInt64) -> Int {
        let zerosInFirst = zeroBytes(first)
        if zerosInFirst != 0 { return zerosInFirst.trailingZeroBitCount &>> 3 }
        return 8 &+ zeroBytes(second).trailingZeroBitCount &>> 3  // 64 bits: 8 + 8
    }

    /// This thread's key cache, looked up once per document.
    @inline(__always)
    static func keyCache(_ cache: inout Unmanaged<BSONKeyCache>?) -> Unmanaged<BSONKeyCache> {
        if let cache { return cache }
        let current = BSONKeyCache.current
        cache = current
        return current
    }

    /// The validated UTF-8 of a C string at `offset` (without its NUL) and
    /// whether it is all ASCII; moves `offset` past the NUL.
    ///
    /// One pass finds the NUL and notes whether any byte is non-ASCII (keys
    /// almost always are ASCII); only then is the full UTF-8 check run.
    @inline(__always)
    func cStringBytes(
        at offset: inout Int, limit: Int,
        what: @autoclosure () -> String
    ) throws(BSONError) -> (UnsafeRawBufferPointer, isASCII: Bool) {
        let start = offset
        guard start < limit, let base = bytes.baseAddress,
            let (length, ascii) = Self.nulAndASCII(in: base + start, count: limit - start)
        else {
            throw Self.unterminated(at: start, what: what())
        }
        let text = UnsafeRawBufferPointer(start: base + start, count: length)
        if !ascii && !Self.isValidUTF8(text) {
            throw BSONError(code: .invalidUTF8, offset: start, message: "\(what()) is not valid UTF-8")
        }
        offset = start + length + 1
        return (text, ascii)
    }

    /// The error for a C string without its NUL (out of line: the decoding
    /// loops stay small).
    @inline(never)
    static func unterminated(at start: Int, what: String) -> BSONError {
        BSONError(
            code: .missingTerminator, offset: start,
            message: "\(what) has no NUL terminator before the end of the enclosing document")
    }

    /// A String from UTF-8 the decoder has validated, which starts at
    /// offset `start` of the input. One of up to 15 bytes is built in place
    /// as a small string (``StringRepresentation``), with two loads (the
    /// input past the string may be read; the bytes are masked off).
    @inline(__always)
    func string(validated text: UnsafeRawBufferPointer, at start: Int) -> String {
        if text.count <= StringRepresentation.smallCapacity && buildsSmallStrings {
            return StringRepresentation.small(
                utf8: bytes.baseAddress.unsafelyUnwrapped + start,
                count: text.count, readable: bytes.count &- start)
        }
        return Self.string(validated: text)
    }

    /// A String from UTF-8 the decoder has validated. Through
    /// `String(unsafeUninitializedCapacity:)`, by copying the bytes into
    /// it, where `String(decoding:)` and `String(validatingCString:)` would
    /// validate again.
    @inline(__always)
    static func string(validated text: UnsafeRawBufferPointer) -> String {
        let count = text.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            if count > 0, let destination = buffer.baseAddress {
                UncheckedBSONEncoder.copy(
                    from: text.baseAddress.unsafelyUnwrapped,
                    to: UnsafeMutableRawPointer(destination), count: count)
            }
            return count
        }
    }

    /// The offset of the first 0x00 in `count` bytes at `start`, and whether
    /// all bytes before it are ASCII; nil if there is no 0x00. Eight bytes
    /// at a time while eight remain.
    @inline(__always)
    static func nulAndASCII(in start: UnsafeRawPointer, count: Int) -> (Int, Bool)? {
        var index = 0
        var seen: UInt64 = 0  // the bytes before the NUL, OR-ed: high bits mean non-ASCII
        while index + 8 <= count {
            let word = UInt64(littleEndian: start.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let zeros = Self.zeroBytes(word)  // only the lowest is used: it is exact
            if zeros != 0 {
                let bits = zeros.trailingZeroBitCount &- 7  // bits before the first zero byte
                seen |= word & ((1 &<< UInt64(bits)) &- 1)
                return (index + bits / 8, seen & 0x8080_8080_8080_8080 == 0)
            }
            seen |= word
            index += 8
        }
        while index < count {
            let byte = start.load(fromByteOffset: index, as: UInt8.self)
            if byte == 0 { return (index, seen & 0x8080_8080_8080_8080 == 0) }
            seen |= UInt64(byte)
            index += 1
        }
        return nil
    }

    @inline(__always)
    func skipCString(at offset: inout Int, limit: Int, what: @autoclosure () -> String) throws(BSONError) {
        let start = offset
        let nul = try findNul(from: start, limit: limit, what: what())
        if !Self.isValidUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<nul])) {
            throw BSONError(code: .invalidUTF8, offset: start, message: "\(what()) is not valid UTF-8")
        }
        offset = nul + 1
    }

    @inline(__always)
    func findNul(from start: Int, limit: Int, what: @autoclosure () -> String) throws(BSONError) -> Int {
        if start < limit, let base = bytes.baseAddress,
            let found = Self.firstNul(in: base + start, count: limit - start)
        {
            return start + found
        }
        throw BSONError(
            code: .missingTerminator, offset: start,
            message: "\(what()) has no NUL terminator before the end of the enclosing document")
    }

    @inline(__always)
    func utf8(from start: Int, to end: Int, what: @autoclosure () -> String) throws(BSONError) -> String {
        let slice = UnsafeRawBufferPointer(start: bytes.baseAddress.unsafelyUnwrapped + start, count: end - start)
        // `String(validating:as:)` is generic and slow here; validate with a
        // specialised check (eight ASCII bytes at a time), then build the
        // string (which cannot need repair).
        guard Self.isValidUTF8(slice) else {
            throw BSONError(code: .invalidUTF8, offset: start, message: "\(what()) is not valid UTF-8")
        }
        return string(validated: slice, at: start)
    }

    /// The offset of the first 0x00 in `count` bytes at `start`, eight
    /// bytes at a time (keys are short: cheaper than a `memchr` call).
    @inline(__always)
    static func firstNul(in start: UnsafeRawPointer, count: Int) -> Int? {
        var index = 0
        while index + 8 <= count {
            let word = start.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            if Self.zeroBytes(word) != 0 { break }
            index += 8
        }
        while index < count {
            if start.load(fromByteOffset: index, as: UInt8.self) == 0 { return index }
            index += 1
        }
        return nil
    }

    /// Strict UTF-8 validation (Unicode 15, table 3-7): no overlong forms,
    /// no surrogates, nothing above U+10FFFF.
    static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        // ASCII, eight bytes at a time: the usual case for keys and ids.
        while index + 8 <= count {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            index += 8
        }
        @inline(__always) func continuation(_ offset: Int) -> Bool {
            offset < count && bytes[offset] & 0xC0 == 0x80
        }
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            switch lead {
            case 0xC2...0xDF:
                guard continuation(index + 1) else { return false }
                index += 2
            case 0xE0...0xEF:
                guard index + 2 < count, continuation(index + 2) else { return false }
                let second = bytes[index + 1]
                switch lead {
                case 0xE0: guard (0xA0...0xBF).contains(second) else { return false }
                case 0xED: guard (0x80...0x9F).contains(second) else { return false }
                default: guard second & 0xC0 == 0x80 else { return false }
                }
                index += 3
            case 0xF0...0xF4:
                guard index + 3 < count, continuation(index + 2), continuation(index + 3) else { return false }
                let second = bytes[index + 1]
                switch lead {
                case 0xF0: guard (0x90...0xBF).contains(second) else { return false }
                case 0xF4: guard (0x80...0x8F).contains(second) else { return false }
                default: guard second & 0xC0 == 0x80 else { return false }
                }
                index += 4
            default:
                return false
            }
        }
        return true
    }
}

extension BSON {
    /// Regular expression options in the canonical (sorted) order BSON
    /// stores them in.
    static func sortedRegexOptions(_ options: String) -> String {
        var previous: UInt8 = 0
        var sorted = true
        for byte in options.utf8 {
            if byte < previous { sorted = false; break }
            previous = byte
        }
        return sorted ? options : String(options.sorted())
    }
}
