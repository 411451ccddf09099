/// A compact-serialized JSON Web Token split into its parts, before any
/// signature or claim check.
///
/// Parsing only checks the structure (three base64url parts, JSON object
/// header and claims, a string `alg`). Verification is done by
/// ``AccessTokenCodec`` for the server's own tokens and by
/// ``CustomJWTVerifier`` for third-party tokens.
///
/// ```swift
/// let token = JWT.signHS256(claims: .object([("sub", .string("u1"))]), secret: secret)
/// let jwt = try JWT(parsing: token)
/// jwt.algorithm               // "HS256"
/// jwt.claims["sub"]           // .string("u1")
/// ```
import IngestSupport
package struct JWT: Sendable {
    /// The decoded header (a JSON object).
    package var header: JSONValue
    /// The decoded claims (a JSON object).
    package var claims: JSONValue
    /// The `alg` header value, exactly as sent.
    package var algorithm: String
    /// `base64url(header) + "." + base64url(claims)`: the bytes the signature covers.
    package var signingInput: [UInt8]
    /// The decoded signature bytes (empty for an unsigned token).
    package var signature: [UInt8]

    /// Tokens longer than this are rejected before any decoding.
    package static let maximumLength = 16 * 1024

    /// Splits and decodes a token.
    ///
    /// - Throws: ``AuthError`` with code `.invalidToken` if the token is not
    ///   three base64url parts with JSON object header and claims.
    package init(parsing token: String) throws(AuthError) {
        guard token.utf8.count <= JWT.maximumLength else {
            throw AuthError(.invalidToken, "the token is longer than \(JWT.maximumLength) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw AuthError(.invalidToken, "the token is not a JWT (expected three dot-separated parts)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw AuthError(.invalidToken, "the token has a part that is not base64url") }
        guard let header = try? JSONValue(parsing: headerBytes, options: .strict(maxDepth: 8)), case .object = header,
            let claims = try? JSONValue(parsing: claimBytes, options: .strict(maxDepth: 16)), case .object = claims
        else { throw AuthError(.invalidToken, "the token header or claims are not a JSON object") }
        guard let algorithm = header["alg"]?.stringValue else {
            throw AuthError(.invalidToken, "the token header has no \"alg\"")
        }
        // RFC 7515 §4.1.11: extensions the recipient must understand; this server understands none.
        guard header["crit"] == nil else {
            throw AuthError(.invalidToken, "the token header has \"crit\" extensions, which are not supported")
        }
        self.header = header
        self.claims = claims
        self.algorithm = algorithm
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        self.signature = signature
    }

    /// Signs `claims` with HMAC-SHA256 and returns the compact token.
    ///
    /// - Parameters:
    ///   - claims: a JSON object of claims.
    ///   - secret: the HMAC key (at least 32 random bytes in practice).
    ///   - keyId: an optional `kid` header.
    package static func signHS256(claims: JSONValue, secret: [UInt8], keyId: String? = nil) -> String {
        var header: [JSONValue.Member] = [.init("alg", .string("HS256")), .init("typ", .string("JWT"))]
        if let keyId { header.append(.init("kid", .string(keyId))) }
        let input =
            Base64URL.encode(Array(JSONValue.object(header).jsonText.utf8)) + "."
            + Base64URL.encode(Array(claims.jsonText.utf8))
        let mac = Crypto.hmacSHA256(key: secret, message: Array(input.utf8))
        return input + "." + Base64URL.encode(mac)
    }

    /// Whether the signature is a valid HMAC-SHA256 of the signing input under `secret`
    /// (constant-time comparison). Does not look at `alg`: callers check it first.
    package func hasValidHS256Signature(secret: [UInt8]) -> Bool {
        let expected = Crypto.hmacSHA256(key: secret, message: signingInput)
        return Crypto.constantTimeEqual(expected, signature)
    }

    /// Whether the signature is a valid RS256 signature of the signing input under `key`.
    /// Does not look at `alg`: callers check it first.
    package func hasValidRS256Signature(key: RSAPublicKey) -> Bool {
        key.verifySHA256(signature: signature, message: signingInput)
    }

    /// A numeric date claim (`exp`, `iat`, `nbf`) in whole seconds, if present and numeric.
    package func numericDate(_ name: String) -> Int64? {
        guard let value = claims[name] else { return nil }
        if let integer = value.integerValue { return integer }
        if let double = value.doubleValue, double.isFinite, abs(double) < 9.0e18 { return Int64(double.rounded(.down)) }
        return nil
    }
}
