/// An incremental UTF-8 validator (the well-formed byte sequences of the
/// Unicode standard, table 3-7): no overlong forms, no surrogates, nothing
/// above U+10FFFF. Text may arrive in pieces that split a character.
///
/// ```swift
/// var validator = UTF8Validator()
/// guard validator.validate(firstFragment), validator.validate(lastFragment), validator.isComplete else { ... }
/// ```
public struct UTF8Validator: Sendable, Hashable {
    /// Continuation bytes still expected for the current character.
    private var pending = 0
    /// The allowed range of the next continuation byte.
    private var low: UInt8 = 0x80
    private var high: UInt8 = 0xBF

    /// A validator at the start of a text.
    public init() {}

    /// Whether the bytes so far end at a character boundary.
    public var isComplete: Bool { pending == 0 }

    /// Checks the next piece of text; false as soon as a byte cannot occur
    /// where it is (the validator must then not be used further).
    public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            if pending == 0 {
                // ASCII runs, eight bytes at a time.
                while index + 8 <= count,
                    bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0
                {
                    index += 8
                }
                guard index < count else { break }
                let byte = bytes[index]
                index += 1
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: pending = 1; low = 0x80; high = 0xBF
                case 0xE0: pending = 2; low = 0xA0; high = 0xBF
                case 0xE1...0xEC, 0xEE...0xEF: pending = 2; low = 0x80; high = 0xBF
                case 0xED: pending = 2; low = 0x80; high = 0x9F
                case 0xF0: pending = 3; low = 0x90; high = 0xBF
                case 0xF1...0xF3: pending = 3; low = 0x80; high = 0xBF
                case 0xF4: pending = 3; low = 0x80; high = 0x8F
                default: return false
                }
            } else {
                let byte = bytes[index]
                index += 1
                guard byte >= low && byte <= high else { return false }
                pending -= 1
                low = 0x80
                high = 0xBF
            }
        }
        return true
    }

    /// Checks the next piece of text (see ``validate(_:)-(UnsafeRawBufferPointer)``).
    public mutating func validate(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { validate($0) }
    }
}
