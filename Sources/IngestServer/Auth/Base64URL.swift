import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs and tokens use it.
///
/// ```swift
/// Base64URL.encode([0xfb, 0xff])      // "-_8"
/// Base64URL.decode("-_8")             // [0xfb, 0xff]
/// ```
public enum Base64URL {
    /// Encodes bytes as unpadded base64url text.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes unpadded (or padded) base64url text; `nil` if it is not valid base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        // Standard base64 characters "+" and "/" are not base64url: reject them.
        guard text.utf8.allSatisfy({ byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x5F || byte == 0x3D
        }) else { return nil }
        var standard = String(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.hasSuffix("=") { standard.removeLast() }
        if standard.utf8.count % 4 == 1 { return nil }
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { return nil }
        return [UInt8](data)
    }
}
