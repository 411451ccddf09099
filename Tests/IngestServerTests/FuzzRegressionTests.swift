import Testing
@testable import IngestServer
import IngestSupport

/// Inputs that Scripts/fuzz.sh found crashing the server's parsers, kept as
/// regression cases (the same inputs are seeds in Fuzz/corpus/).
@Suite struct FuzzRegressionTests {
    let secret = Array("fuzz-secret-0123456789abcdef0123".utf8)
    let now: Int64 = 1_800_000_000

    /// Signs `header` and `claims` (JSON text, as sent) with HS256 under `secret`.
    func signed(header: String, claims: String) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(Crypto.hmacSHA256(key: secret, message: Array(input.utf8)))
    }

    /// Found by the jwt target: `exp` = 2^63 - 1 made `exp + leeway` trap
    /// (integer overflow) in AccessTokenCodec.verify.
    @Test func accessTokenWithMaximalExpiryDoesNotOverflow() throws {
        let codec = AccessTokenCodec(appId: "fuzz-app", secret: secret)
        let token = signed(
            header: #"{"alg":"HS256"}"#,
            claims:
                #"{"iss":"dataingest","sub":"u","aud":"fuzz-app","did":"d","typ":"access","iat":1,"exp":9223372036854775807}"#)
        let claims = try codec.verify(token, now: now)
        #expect(claims.expiresAt == Int64.max)
        #expect(claims.userId == "u")

        // The smallest exp is simply expired.
        let expired = signed(
            header: #"{"alg":"HS256"}"#,
            claims:
                #"{"iss":"dataingest","sub":"u","aud":"fuzz-app","did":"d","typ":"access","iat":1,"exp":-9223372036854775808}"#)
        let error = #expect(throws: AuthError.self) { try codec.verify(expired, now: now) }
        #expect(error?.code == .expiredToken)
    }

    /// The same overflow in CustomJWTVerifier: `exp + leeway`, and
    /// `exp - iat` for the lifetime check with an extreme `iat`.
    @Test func customTokenWithExtremeTimesIsRejectedWithoutOverflow() throws {
        let verifier = CustomJWTVerifier(settings: CustomTokenSettings(keys: [.init(material: .hs256(secret: secret))]))
        for claims in [
            #"{"sub":"u","exp":9223372036854775807}"#,
            #"{"sub":"u","iat":\#(now),"exp":9223372036854775807}"#,
            #"{"sub":"u","iat":-9223372036854775807,"exp":\#(now + 60)}"#,
        ] {
            let error = #expect(throws: AuthError.self) {
                try verifier.verify(signed(header: #"{"alg":"HS256"}"#, claims: claims), now: now)
            }
            #expect(error?.code == .invalidCredentials, "\(claims)")
        }
        // nbf far in the future and exp far in the past are ordinary rejections.
        let notYet = signed(header: #"{"alg":"HS256"}"#, claims: #"{"sub":"u","exp":\#(now + 60),"nbf":9223372036854775807}"#)
        #expect((#expect(throws: AuthError.self) { try verifier.verify(notYet, now: now) })?.code == .expiredToken)
        let valid = signed(header: #"{"alg":"HS256"}"#, claims: #"{"sub":"u","iat":\#(now),"exp":\#(now + 60)}"#)
        #expect(try verifier.verify(valid, now: now) == "u")
    }
}
