/// Reads the header line of a sync message: space-separated fields up to the
/// first newline, then a body of declared size. Strict: single spaces, plain
/// decimal numbers (a `-` only where the field is signed), booleans `0` or
/// `1`, no field left over, a body of exactly the declared length.
struct SyncHeaderReader {
    let message: [UInt8]
    /// The field ranges in `message`, the message type first.
    private var fields: [Range<Int>] = []
    private var next = 1
    /// Where the body starts (just after the newline).
    let bodyStart: Int

    init(_ message: [UInt8], limits: SyncMessageLimits) throws(SyncMessageError) {
        self.message = message
        let scanEnd = min(message.count, limits.maxHeaderBytes)
        guard let newline = message[0..<scanEnd].firstIndex(of: 0x0A) else {
            if message.count > limits.maxHeaderBytes {
                throw SyncMessageError(
                    .limitExceeded, offset: limits.maxHeaderBytes,
                    message: "no newline within the first \(limits.maxHeaderBytes) bytes")
            }
            throw SyncMessageError(.badSyntax, offset: message.count, message: "the header line has no newline")
        }
        bodyStart = newline + 1
        var fieldStart = 0
        for index in 0...newline where index == newline || message[index] == 0x20 {
            guard index > fieldStart else {
                throw SyncMessageError(.badSyntax, offset: index, message: "an empty field in the header line")
            }
            fields.append(fieldStart..<index)
            fieldStart = index + 1
        }
    }

    /// The message type (the first field).
    var type: String { String(decoding: message[fields[0]], as: UTF8.self) }

    /// How many fields follow the type.
    var argumentCount: Int { fields.count - 1 }

    private mutating func take(_ name: StaticString) throws(SyncMessageError) -> Range<Int> {
        guard next < fields.count else {
            throw SyncMessageError(.badSyntax, offset: bodyStart - 1, message: "the header line ends before \(name)")
        }
        defer { next += 1 }
        return fields[next]
    }

    /// An unsigned decimal field.
    mutating func unsigned(_ name: StaticString) throws(SyncMessageError) -> UInt64 {
        let range = try take(name)
        return try Self.digits(message[range], at: range.lowerBound, name)
    }

    /// A signed decimal field (`-` allowed).
    mutating func signed(_ name: StaticString) throws(SyncMessageError) -> Int64 {
        let range = try take(name)
        var digits = message[range]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        let magnitude = try Self.digits(digits, at: digits.startIndex, name)
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw Self.outOfRange(range.lowerBound, name) }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw Self.outOfRange(range.lowerBound, name) }
        return Int64(magnitude)
    }

    /// A size field, at most `limit`.
    mutating func size(_ name: StaticString, limit: Int) throws(SyncMessageError) -> Int {
        let offset = next < fields.count ? fields[next].lowerBound : bodyStart - 1
        let value = try unsigned(name)
        guard value <= UInt64(limit) else {
            throw SyncMessageError(.limitExceeded, offset: offset, message: "\(name) \(value) is over the limit of \(limit)")
        }
        return Int(value)
    }

    /// A 32-bit signed field (error codes, batch states).
    mutating func int32(_ name: StaticString) throws(SyncMessageError) -> Int {
        let offset = next < fields.count ? fields[next].lowerBound : bodyStart - 1
        let value = try signed(name)
        guard let small = Int32(exactly: value) else { throw Self.outOfRange(offset, name) }
        return Int(small)
    }

    /// A boolean field: `0` or `1`.
    mutating func bool(_ name: StaticString) throws(SyncMessageError) -> Bool {
        let range = try take(name)
        guard range.count == 1, message[range.lowerBound] == 0x30 || message[range.lowerBound] == 0x31 else {
            throw SyncMessageError(.badSyntax, offset: range.lowerBound, message: "\(name) must be 0 or 1")
        }
        return message[range.lowerBound] == 0x31
    }

    /// A decimal floating-point field (digits, `.`, an exponent).
    mutating func double(_ name: StaticString) throws(SyncMessageError) -> Double {
        let range = try take(name)
        let text = message[range]
        guard text.count <= 64,
            text.allSatisfy({ (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 || $0 == 0x2D || $0 == 0x2B }),
            let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite
        else {
            throw SyncMessageError(.badSyntax, offset: range.lowerBound, message: "\(name) is not a decimal number")
        }
        return value
    }

    /// Checks that no field is left over.
    func end() throws(SyncMessageError) {
        guard next == fields.count else {
            throw SyncMessageError(.badSyntax, offset: fields[next].lowerBound, message: "extra fields in the \(type) header line")
        }
    }

    /// The body, which must be exactly `count` bytes (all that follows the header).
    func body(count: Int) throws(SyncMessageError) -> [UInt8] {
        let available = message.count - bodyStart
        guard available == count else {
            throw SyncMessageError(
                .badSyntax, offset: bodyStart,
                message: "the \(type) body has \(available) bytes, the header says \(count)")
        }
        return Array(message[bodyStart...])
    }

    /// The body as UTF-8 text of exactly `count` bytes.
    func text(count: Int, _ name: StaticString) throws(SyncMessageError) -> String {
        let bytes = try body(count: count)
        return try Self.utf8(bytes, at: bodyStart, name)
    }

    static func utf8(_ bytes: some Collection<UInt8>, at offset: Int, _ name: StaticString) throws(SyncMessageError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw SyncMessageError(.badSyntax, offset: offset, message: "\(name) is not valid UTF-8")
        }
        return text
    }

    static func digits(_ text: ArraySlice<UInt8>, at offset: Int, _ name: StaticString) throws(SyncMessageError) -> UInt64 {
        guard !text.isEmpty, text.count <= 20 else {
            throw SyncMessageError(.badSyntax, offset: offset, message: "\(name) is not a decimal number")
        }
        var value: UInt64 = 0
        for byte in text {
            guard (0x30...0x39).contains(byte) else {
                throw SyncMessageError(.badSyntax, offset: offset, message: "\(name) is not a decimal number")
            }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - 0x30))
            guard !overflow1 && !overflow2 else { throw outOfRange(offset, name) }
            value = sum
        }
        return value
    }

    static func outOfRange(_ offset: Int, _ name: StaticString) -> SyncMessageError {
        SyncMessageError(.badSyntax, offset: offset, message: "\(name) is out of range")
    }
}

/// Writes a header line and a body.
struct SyncHeaderWriter {
    private(set) var bytes: [UInt8] = []

    init(_ type: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: type.utf8Start, count: type.utf8CodeUnitCount))
    }

    mutating func field(_ value: some BinaryInteger) {
        bytes.append(0x20)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func field(_ value: Bool) { field(value ? 1 : 0) }

    mutating func field(text: String) {
        bytes.append(0x20)
        bytes.append(contentsOf: text.utf8)
    }

    /// Ends the header line and appends the body.
    mutating func finish(body: some Sequence<UInt8> = [UInt8]()) -> [UInt8] {
        bytes.append(0x0A)
        bytes.append(contentsOf: body)
        return bytes
    }
}
