import Foundation
import Testing
@testable import IngestServer
import IngestSupport
import IngestTestSupport

@Suite struct AuthJWTTests {
    let secret = Array("0123456789abcdef0123456789abcdef-app-one".utf8)
    let now: Int64 = 1_800_000_000

    func claims(_ extra: [(key: String, value: JSONValue)] = [], dropping: Set<String> = []) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("iss", .string("dataingest")), ("sub", .string("user-1")), ("aud", .string("app-one")),
            ("did", .string("device-1")), ("typ", .string("access")), ("iat", .integer(now)), ("exp", .integer(now + 1800)),
        ]
        members.removeAll { dropping.contains($0.key) || extra.map(\.key).contains($0.key) }
        return .object((members + extra).map { .init($0.key, $0.value) })
    }

    @Test func issuedTokenVerifies() throws {
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        let token = codec.issue(userId: "user-1", deviceId: "device-1", now: now)
        let verified = try codec.verify(token, now: now + 60)
        #expect(
            verified
                == AccessClaims(
                    userId: "user-1", appId: "app-one", deviceId: "device-1", issuedAt: now,
                    expiresAt: now + 1800))
        let jwt = try JWT(parsing: token)
        #expect(jwt.algorithm == "HS256")
        #expect(jwt.claims["aud"] == .string("app-one"))
    }

    @Test func expiryHonoursLeewayThenFails() throws {
        let codec = AccessTokenCodec(appId: "app-one", secret: secret, lifetimeSeconds: 600, leewaySeconds: 30)
        let token = codec.issue(userId: "u", deviceId: "d", now: now)
        _ = try codec.verify(token, now: now + 600 + 30)
        let error = #expect(throws: AuthError.self) { try codec.verify(token, now: now + 600 + 31) }
        #expect(error?.code == .expiredToken)
        #expect(error?.httpStatus == 401)
    }

    @Test func forgedSignatureIsRejected() throws {
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        let token = codec.issue(userId: "user-1", deviceId: "d", now: now)
        let parts = token.split(separator: ".")
        // Same signature, claims changed to another user.
        let forgedClaims = Base64URL.encode(Array(claims([("sub", .string("admin"))]).jsonText.utf8))
        let forged = "\(parts[0]).\(forgedClaims).\(parts[2])"
        #expect((#expect(throws: AuthError.self) { try codec.verify(forged, now: now) })?.code == .invalidToken)
        // Signed with another secret.
        let otherSecret = JWT.signHS256(claims: claims(), secret: Array("another secret of at least 32 bytes!!".utf8))
        #expect((#expect(throws: AuthError.self) { try codec.verify(otherSecret, now: now) })?.code == .invalidToken)
        // Garbage.
        for junk in ["", "a.b", "a.b.c.d", "!!.!!.!!", token + "x"] {
            #expect((#expect(throws: AuthError.self) { try codec.verify(junk, now: now) })?.code == .invalidToken)
        }
    }

    @Test func algNoneAndOtherAlgorithmsAreRejected() throws {
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        for alg in ["none", "None", "HS512", "RS256", "hs256"] {
            let header = JSONValue.object([.init("alg", .string(alg)), .init("typ", .string("JWT"))])
            // Even with a correct HMAC over the input, only "HS256" is accepted.
            let input =
                Base64URL.encode(Array(header.jsonText.utf8)) + "."
                + Base64URL.encode(Array(claims().jsonText.utf8))
            let signed = input + "." + Base64URL.encode(Crypto.hmacSHA256(key: secret, message: Array(input.utf8)))
            #expect((#expect(throws: AuthError.self) { try codec.verify(signed, now: now) })?.code == .invalidToken)
            #expect(
                (#expect(throws: AuthError.self) {
                    try codec.verify(rawJWT(header: header, claims: claims()), now: now)
                })?.code == .invalidToken)
        }
    }

    @Test func criticalHeaderExtensionsAreRejected() throws {
        let header = JSONValue.object([.init("alg", .string("HS256")), .init("crit", .array([.string("b64")])), .init("b64", .bool(false))])
        let input = Base64URL.encode(Array(header.jsonText.utf8)) + "." + Base64URL.encode(Array(claims().jsonText.utf8))
        let token = input + "." + Base64URL.encode(Crypto.hmacSHA256(key: secret, message: Array(input.utf8)))
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        #expect((#expect(throws: AuthError.self) { try codec.verify(token, now: now) })?.code == .invalidToken)
    }

    @Test func duplicateClaimsAreRejected() throws {
        // Two "sub" claims must not be read two ways: the strict parser refuses them.
        let header = Base64URL.encode(Array(#"{"alg":"HS256"}"#.utf8))
        let body = Base64URL.encode(
            Array(
                #"{"sub":"user-1","sub":"admin","aud":"app-one","did":"d","typ":"access","iss":"dataingest","iat":\#(now),"exp":\#(now + 60)}"#
                    .utf8))
        let input = header + "." + body
        let token = input + "." + Base64URL.encode(Crypto.hmacSHA256(key: secret, message: Array(input.utf8)))
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        #expect((#expect(throws: AuthError.self) { try codec.verify(token, now: now) })?.code == .invalidToken)
    }

    @Test func tokenOfAnotherAppIsForbidden() throws {
        let appOne = AccessTokenCodec(appId: "app-one", secret: secret)
        let appTwo = AccessTokenCodec(appId: "app-two", secret: Array("a different secret for app two, 32+ bytes".utf8))
        let token = appOne.issue(userId: "u", deviceId: "d", now: now)
        // The signature comes first: to app two's codec alone the token is
        // unsigned, whatever its aud says (AuthService tells another app's
        // genuine token apart: AuthTokenOrderTests).
        let error = #expect(throws: AuthError.self) { try appTwo.verify(token, now: now) }
        #expect(error?.code == .invalidToken)
        #expect(error?.httpStatus == 401)
        // With a shared secret, the audience scopes the token.
        let sharedSecret = AccessTokenCodec(appId: "app-two", secret: secret)
        #expect((#expect(throws: AuthError.self) { try sharedSecret.verify(token, now: now) })?.code == .wrongApp)
    }

    @Test func missingClaimsAndWrongTypeAreRejected() throws {
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        for name in ["sub", "did", "exp", "iat", "typ", "iss"] {
            let token = JWT.signHS256(claims: claims(dropping: [name]), secret: secret)
            #expect((#expect(throws: AuthError.self) { try codec.verify(token, now: now) })?.code == .invalidToken)
        }
        let refreshTyped = JWT.signHS256(claims: claims([("typ", .string("refresh"))]), secret: secret)
        #expect((#expect(throws: AuthError.self) { try codec.verify(refreshTyped, now: now) })?.code == .invalidToken)
        let future = JWT.signHS256(
            claims: claims([("iat", .integer(now + 3600)), ("exp", .integer(now + 7200))]),
            secret: secret)
        #expect((#expect(throws: AuthError.self) { try codec.verify(future, now: now) })?.code == .invalidToken)
    }

    // MARK: - Custom JWT provider

    let issuerSecret = Array("issuer-shared-secret-with-enough-bytes".utf8)

    func customClaims(_ extra: [(key: String, value: JSONValue)] = [], dropping: Set<String> = []) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("iss", .string("https://issuer.example")), ("sub", .string("customer-42")), ("aud", .string("weather")),
            ("iat", .integer(now)), ("exp", .integer(now + 600)),
        ]
        members.removeAll { dropping.contains($0.key) || extra.map(\.key).contains($0.key) }
        return .object((members + extra).map { .init($0.key, $0.value) })
    }

    @Test func customHS256TokenChecksSignatureAudienceIssuerAndExpiry() throws {
        let verifier = CustomJWTVerifier(
            settings: CustomTokenSettings(
                keys: [.init(material: .hs256(secret: issuerSecret))], audience: ["weather"], issuer: "https://issuer.example"))
        #expect(try verifier.verify(JWT.signHS256(claims: customClaims(), secret: issuerSecret), now: now) == "customer-42")
        // aud as an array containing the app's audience.
        let arrayAudience = customClaims([("aud", .array([.string("other"), .string("weather")]))])
        #expect(try verifier.verify(JWT.signHS256(claims: arrayAudience, secret: issuerSecret), now: now) == "customer-42")

        func code(_ claims: JSONValue, secret: [UInt8]? = nil, at time: Int64? = nil) -> AuthError.Code? {
            let token = JWT.signHS256(claims: claims, secret: secret ?? issuerSecret)
            return (#expect(throws: AuthError.self) { try verifier.verify(token, now: time ?? now) })?.code
        }
        #expect(code(customClaims(), secret: Array("wrong secret wrong secret wrong secret".utf8)) == .invalidCredentials)
        #expect(code(customClaims([("aud", .string("someone-else"))])) == .invalidCredentials)
        #expect(code(customClaims(dropping: ["aud"])) == .invalidCredentials)
        #expect(code(customClaims([("iss", .string("https://evil.example"))])) == .invalidCredentials)
        #expect(code(customClaims(), at: now + 600 + 31) == .expiredToken)
        #expect(code(customClaims(dropping: ["exp"])) == .invalidCredentials)
        #expect(code(customClaims(dropping: ["sub"])) == .invalidCredentials)
        #expect(code(customClaims([("nbf", .integer(now + 3600))])) == .expiredToken)
        #expect(code(customClaims([("exp", .integer(now + 30 * 86_400))])) == .invalidCredentials)
        let none = rawJWT(header: .object([.init("alg", .string("none"))]), claims: customClaims())
        #expect((#expect(throws: AuthError.self) { try verifier.verify(none, now: now) })?.code == .invalidCredentials)
    }

    @Test func customRS256TokenVerifiesAndResistsAlgorithmConfusion() throws {
        let directory = try TemporaryDirectory("auth")
        guard let key = try TestEnvironment.require(TestRSAKey(in: directory), "the openssl command line tool") else { return }
        let verifier = CustomJWTVerifier(
            settings: CustomTokenSettings(
                keys: [.init(material: .rs256(try RSAPublicKey(pem: key.publicPEM)))], audience: ["weather"]))
        let token = try key.sign(claims: customClaims())
        #expect(try verifier.verify(token, now: now) == "customer-42")

        // Tampered claims with the original signature.
        let parts = token.split(separator: ".")
        let tampered = "\(parts[0]).\(Base64URL.encode(Array(customClaims([("sub", .string("admin"))]).jsonText.utf8))).\(parts[2])"
        #expect((#expect(throws: AuthError.self) { try verifier.verify(tampered, now: now) })?.code == .invalidCredentials)

        // Algorithm confusion: an HS256 token keyed with the public PEM text is refused,
        // because only RS256 keys are configured.
        let confused = JWT.signHS256(claims: customClaims(), secret: Array(key.publicPEM.utf8))
        #expect((#expect(throws: AuthError.self) { try verifier.verify(confused, now: now) })?.code == .invalidCredentials)

        // A token from another key pair fails.
        guard let other = try TestRSAKey(in: directory, name: "other") else { return }
        #expect(
            (#expect(throws: AuthError.self) {
                try verifier.verify(try other.sign(claims: customClaims()), now: now)
            })?.code == .invalidCredentials)

        // Expired RS256 token.
        let expired = try key.sign(claims: customClaims([("iat", .integer(now - 7200)), ("exp", .integer(now - 3600))]))
        #expect((#expect(throws: AuthError.self) { try verifier.verify(expired, now: now) })?.code == .expiredToken)
    }

    @Test func keyIdSelectsAmongSeveralKeys() throws {
        let oldSecret = Array("old-issuer-secret-with-enough-bytes!!".utf8)
        let verifier = CustomJWTVerifier(
            settings: CustomTokenSettings(keys: [
                .init(material: .hs256(secret: oldSecret), keyId: "2025"),
                .init(material: .hs256(secret: issuerSecret), keyId: "2026"),
            ]))
        #expect(
            try verifier.verify(JWT.signHS256(claims: customClaims(), secret: issuerSecret, keyId: "2026"), now: now)
                == "customer-42")
        #expect(
            try verifier.verify(JWT.signHS256(claims: customClaims(), secret: oldSecret, keyId: "2025"), now: now)
                == "customer-42")
        // No kid: every key of the algorithm is tried.
        #expect(try verifier.verify(JWT.signHS256(claims: customClaims(), secret: oldSecret), now: now) == "customer-42")
        // A kid that names one key does not fall back to the others.
        #expect(throws: AuthError.self) {
            try verifier.verify(JWT.signHS256(claims: customClaims(), secret: oldSecret, keyId: "2026"), now: now)
        }
    }
}
