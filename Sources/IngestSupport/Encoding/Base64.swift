/// Base64 (RFC 4648): the standard alphabet with `=` padding, as Extended
/// JSON's `$binary` uses it, and the URL-safe alphabet (§5) without padding,
/// as JWTs and tokens use it (``Base64URL``). One codec serves both.
///
/// ```swift
/// Base64.encode([0xfb, 0xff])          // "+/8="
/// Base64.decode("+/8=")                // [0xfb, 0xff]
/// ```
package enum Base64 {
    /// The 64 characters of an alphabet, in value order.
    package struct Alphabet: Sendable {
        let characters: [UInt8]
        /// Value of each byte, or 0xFF for a byte outside the alphabet.
        let values: [UInt8]

        init(_ text: String) {
            characters = Array(text.utf8)
            var values = [UInt8](repeating: 0xFF, count: 256)
            for (value, character) in characters.enumerated() { values[Int(character)] = UInt8(value) }
            self.values = values
        }

        /// `A–Z a–z 0–9 + /`.
        package static let standard = Alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        /// `A–Z a–z 0–9 - _` (RFC 4648 §5).
        package static let url = Alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    }

    /// Appends the base64 text of `bytes` to `out`, with `=` padding when `padded`.
    package static func encode(
        _ bytes: some Collection<UInt8>, to out: inout [UInt8], alphabet: Alphabet = .standard, padded: Bool = true
    ) {
        let table = alphabet.characters
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            let chunk = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            out.append(table[Int(chunk >> 18 & 63)])
            out.append(table[Int(chunk >> 12 & 63)])
            if second != nil {
                out.append(table[Int(chunk >> 6 & 63)])
            } else if padded {
                out.append(UInt8(ascii: "="))
            }
            if third != nil {
                out.append(table[Int(chunk & 63)])
            } else if padded {
                out.append(UInt8(ascii: "="))
            }
            if third == nil { break }
        }
    }

    /// The base64 text of `bytes`.
    package static func encode(_ bytes: some Collection<UInt8>, alphabet: Alphabet = .standard, padded: Bool = true) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        encode(bytes, to: &out, alphabet: alphabet, padded: padded)
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64 text; nil for anything else (a character outside the
    /// alphabet, a length no encoding has, padding where none belongs).
    ///
    /// With `requirePadding` the text must be padded to a multiple of four
    /// characters (the standard form); without it, trailing `=` are optional.
    package static func decode(
        _ text: some StringProtocol, alphabet: Alphabet = .standard, requirePadding: Bool = true
    ) -> [UInt8]? {
        var input = Array(text.utf8)
        if requirePadding {
            guard input.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, input.last == UInt8(ascii: "=") {
                input.removeLast()
                padding += 1
            }
        } else {
            while input.last == UInt8(ascii: "=") { input.removeLast() }
        }
        // A last group of one character carries no whole byte.
        guard input.count % 4 != 1 else { return nil }
        let values = alphabet.values
        var out: [UInt8] = []
        out.reserveCapacity(input.count / 4 * 3 + 2)
        var chunk: UInt32 = 0
        var count = 0
        for byte in input {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            chunk = chunk << 6 | UInt32(value)
            count += 1
            if count == 4 {
                out.append(UInt8(truncatingIfNeeded: chunk >> 16))
                out.append(UInt8(truncatingIfNeeded: chunk >> 8))
                out.append(UInt8(truncatingIfNeeded: chunk))
                chunk = 0
                count = 0
            }
        }
        if count == 2 {
            out.append(UInt8(truncatingIfNeeded: chunk >> 4))
        } else if count == 3 {
            out.append(UInt8(truncatingIfNeeded: chunk >> 10))
            out.append(UInt8(truncatingIfNeeded: chunk >> 2))
        }
        return out
    }
}

/// Base64url without padding (RFC 4648 §5), as JWTs and tokens use it; padded
/// text is accepted too.
///
/// ```swift
/// Base64URL.encode([0xfb, 0xff])      // "-_8"
/// Base64URL.decode("-_8")             // [0xfb, 0xff]
/// ```
package enum Base64URL {
    /// Encodes bytes as unpadded base64url text.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64.encode(bytes, alphabet: .url, padded: false)
    }

    /// Decodes unpadded (or padded) base64url text; `nil` if it is not valid base64url.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64.decode(text, alphabet: .url, requirePadding: false)
    }
}
