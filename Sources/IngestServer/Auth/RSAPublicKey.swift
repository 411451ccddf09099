import CCrypto
import Foundation
import IngestSupport

/// An RSA public key read from PEM, used to verify RS256 signatures
/// (RSASSA-PKCS1-v1_5 with SHA-256) on third-party JWTs.
///
/// ```swift
/// let key = try RSAPublicKey(pem: try String(contentsOfFile: "issuer.pub.pem", encoding: .utf8))
/// let ok = key.verifySHA256(signature: signature, message: Array(signingInput.utf8))
/// ```
// @unchecked: the EVP_PKEY is immutable after init; OpenSSL 3 allows
// concurrent verification with one key, each call uses its own EVP_MD_CTX.
package final class RSAPublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// Reads a `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo) PEM block.
    ///
    /// - Throws: ``CryptoError`` with code `.invalidKey` if the text is not a
    ///   PEM public key or the key is not RSA (or shorter than 2048 bits).
    package init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let parsed else {
            throw CryptoError(
                .invalidKey,
                "not a PEM public key (expected -----BEGIN PUBLIC KEY-----): \(CryptoError.lastOpenSSLError())")
        }
        guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_RSA else {
            EVP_PKEY_free(parsed)
            throw CryptoError(.invalidKey, "the PEM public key is not an RSA key; RS256 needs RSA")
        }
        guard EVP_PKEY_get_bits(parsed) >= 2048 else {
            let bits = EVP_PKEY_get_bits(parsed)
            EVP_PKEY_free(parsed)
            throw CryptoError(.invalidKey, "the RSA key has \(bits) bits; use at least 2048")
        }
        key = parsed
    }

    deinit { EVP_PKEY_free(key) }

    /// Whether `signature` is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of `message`.
    package func verifySHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            ERR_clear_error()
        }
        guard EVP_DigestVerifyInit(context, nil, dataingest_evp_sha256(), nil, key) == 1 else { return false }
        let rc = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, msg.count)
            }
        }
        return rc == 1
    }
}
