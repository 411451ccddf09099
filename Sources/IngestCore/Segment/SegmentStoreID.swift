/// The 16-byte identity of a segment store (a random RFC 4122 version 4 UUID),
/// written into every segment header so the server can tell devices apart.
///
/// ```swift
/// let id = SegmentStoreID.random()
/// print(id.uuidString)            // "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
/// SegmentStoreID(uuidString: id.uuidString) == id   // true
/// ```
public struct SegmentStoreID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes in RFC 4122 (network) order.
    public let bytes: [UInt8]

    /// An id from 16 bytes; `nil` if `bytes` is not 16 bytes long.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A new random (version 4) id.
    public static func random() -> SegmentStoreID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return SegmentStoreID(bytes: bytes)!
    }

    /// Parses the canonical 36-character form (hex digits, either case, with dashes).
    public init?(uuidString: String) {
        let hex = uuidString.utf8.filter { $0 != UInt8(ascii: "-") }
        guard uuidString.utf8.count == 36, hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var index = hex.startIndex
        while index < hex.endIndex {
            guard let high = Self.nibble(hex[index]), let low = Self.nibble(hex[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// The canonical upper-case form, e.g. `3F2504E0-4F89-41D3-9A0C-0305E82C3301`.
    public var uuidString: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { uuidString }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
