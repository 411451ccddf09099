import CCrypto
import Foundation

/// The cryptographic primitives of client and server, each a thin wrapper over libcrypto.
///
/// ```swift
/// let digest = Crypto.sha256(Array("abc".utf8))           // 32 bytes
/// let mac = Crypto.hmacSHA256(key: secret, message: data) // 32 bytes
/// let token = try Crypto.randomBytes(32)
/// ```
package enum Crypto {
    /// The SHA-256 digest of `message` (32 bytes).
    package static func sha256(_ message: some Collection<UInt8>) -> [UInt8] {
        digest(message, length: Int(SHA256_DIGEST_LENGTH), SHA256)
    }

    /// The SHA-1 digest of `message` (20 bytes); only for protocols that
    /// require it, such as the WebSocket handshake's `Sec-WebSocket-Accept`.
    package static func sha1(_ message: some Collection<UInt8>) -> [UInt8] {
        digest(message, length: Int(SHA_DIGEST_LENGTH), SHA1)
    }

    /// A one-shot libcrypto digest function (`SHA1`, `SHA256`) applied to `message`.
    private static func digest(
        _ message: some Collection<UInt8>, length: Int,
        _ function: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>?
    ) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: length)
        let bytes = Array(message)
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = function(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
    }

    /// The HMAC-SHA256 of `message` under `key` (32 bytes).
    package static func hmacSHA256(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let keyBytes = Array(key)
        let messageBytes = Array(message)
        keyBytes.withUnsafeBufferPointer { k in
            messageBytes.withUnsafeBufferPointer { m in
                mac.withUnsafeMutableBufferPointer { out in
                    // An empty key still needs a valid pointer for HMAC.
                    let keyPointer = UnsafeRawPointer(k.baseAddress) ?? UnsafeRawPointer(out.baseAddress!)
                    _ = HMAC(
                        dataingest_evp_sha256(), keyPointer, Int32(k.count),
                        m.baseAddress, m.count, out.baseAddress, &length)
                }
            }
        }
        return Array(mac.prefix(Int(length)))
    }

    /// `count` bytes from libcrypto's cryptographically secure generator.
    ///
    /// - Throws: ``CryptoError`` with code `.random` if the generator fails.
    package static func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let rc = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard rc == 1 else {
            throw CryptoError(.random, "RAND_bytes failed: \(CryptoError.lastOpenSSLError())")
        }
        return bytes
    }

    /// Compares two byte strings in time that depends only on their length,
    /// so that an attacker cannot learn how many leading bytes matched.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, pa.count) == 0 }
        }
    }

    /// Derives `length` bytes from a password with scrypt (`EVP_PBE_scrypt`).
    ///
    /// - Parameters:
    ///   - logN: the CPU/memory cost as a power of two (N = 2^logN).
    ///   - r: the block size; memory use is about 128 · N · r bytes.
    ///   - p: the parallelization factor.
    package static func scrypt(
        password: [UInt8], salt: [UInt8], logN: Int, r: Int, p: Int,
        length: Int
    ) throws(CryptoError) -> [UInt8] {
        guard (1...24).contains(logN), (1...64).contains(r), (1...16).contains(p), length > 0 else {
            throw CryptoError(
                .invalidParameters,
                "scrypt parameters out of range: logN=\(logN) r=\(r) p=\(p) length=\(length)")
        }
        let n = UInt64(1) << UInt64(logN)
        // scrypt needs 128·N·r bytes for V plus 128·r·p for B; leave headroom.
        let maxMemory = UInt64(128) * UInt64(r) * (n + UInt64(p) + 2) + 1 << 20
        var output = [UInt8](repeating: 0, count: length)
        // A buffer with at least one byte, so that an empty password still has a valid pointer.
        let passwordBuffer: [CChar] = password.isEmpty ? [0] : password.map { CChar(bitPattern: $0) }
        let rc = passwordBuffer.withUnsafeBufferPointer { pw in
            salt.withUnsafeBufferPointer { s in
                output.withUnsafeMutableBufferPointer { out in
                    EVP_PBE_scrypt(
                        pw.baseAddress, password.count, s.baseAddress, s.count,
                        n, UInt64(r), UInt64(p), maxMemory, out.baseAddress, out.count)
                }
            }
        }
        guard rc == 1 else {
            throw CryptoError(.kdf, "EVP_PBE_scrypt failed: \(CryptoError.lastOpenSSLError())")
        }
        return output
    }
}

/// An error from libcrypto, with the OpenSSL error text when there is one.
package struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// What kind of operation failed. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The secure random generator failed.
        package static let random = Code(rawValue: "random")
        /// The password KDF failed.
        package static let kdf = Code(rawValue: "kdf")
        /// Parameters outside the accepted range.
        package static let invalidParameters = Code(rawValue: "invalid_parameters")
        /// A PEM key could not be read, or is not the expected key type.
        package static let invalidKey = Code(rawValue: "invalid_key")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do.
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "CryptoError(\(code.rawValue)): \(message)" }

    /// Pops the most recent OpenSSL error as text (and clears the queue).
    package static func lastOpenSSLError() -> String {
        let code = ERR_get_error()
        defer { ERR_clear_error() }
        guard code != 0 else { return "no OpenSSL error recorded" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
