import Foundation
import Testing
@testable import IngestServer
import IngestSupport
import IngestTestSupport

@Suite struct AuthCryptoTests {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func sha256MatchesFIPSVector() {
        #expect(
            hex(Crypto.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex(Crypto.sha256([UInt8]()))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = Crypto.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Crypto.hmacSHA256(key: [UInt8](), message: Array("x".utf8)).count == 32)
    }

    @Test func scryptMatchesRFC7914() throws {
        let derived = try Crypto.scrypt(
            password: Array("password".utf8), salt: Array("NaCl".utf8), logN: 10, r: 8, p: 16,
            length: 64)
        #expect(
            hex(derived) == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
                + "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640")
        #expect(throws: CryptoError.self) {
            try Crypto.scrypt(password: [], salt: [], logN: 40, r: 8, p: 1, length: 32)
        }
    }

    @Test func randomBytesDiffer() throws {
        let a = try Crypto.randomBytes(32)
        let b = try Crypto.randomBytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }

    @Test func constantTimeEqualComparesContentAndLength() {
        #expect(Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(Crypto.constantTimeEqual([], []))
    }

    @Test func base64URLRoundTripsAndRejectsStandardAlphabet() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("+/8") == nil)
        #expect(Base64URL.decode("a") == nil)
        #expect(Base64URL.decode("a b") == nil)
    }

    @Test func passwordHashVerifiesAndRejectsWrongPassword() throws {
        let hasher = PasswordHasher(parameters: .init(logN: 10, r: 8, p: 1))
        let stored = try hasher.hash("correct horse battery staple")
        #expect(stored.hasPrefix("$scrypt$ln=10,r=8,p=1$"))
        #expect(!stored.contains("correct horse"))
        #expect(try hasher.verify("correct horse battery staple", against: stored))
        #expect(try !hasher.verify("correct horse battery stapler", against: stored))
        // The same password hashes differently each time (random salt).
        #expect(try hasher.hash("correct horse battery staple") != stored)
        // Parameters travel with the hash: a hasher with other defaults still verifies it.
        #expect(try PasswordHasher(parameters: .init(logN: 11)).verify("correct horse battery staple", against: stored))
        #expect(throws: CryptoError.self) { try hasher.verify("x", against: "$pbkdf2$whatever") }
    }

    @Test func rsaPublicKeyRejectsNonKeys() {
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: "not a key") }
        #expect(throws: CryptoError.self) {
            try RSAPublicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        }
    }

    @Test func rsaSignatureFromOpenSSLVerifies() throws {
        let directory = try TemporaryDirectory("auth")
        guard let key = try TestEnvironment.require(TestRSAKey(in: directory), "the openssl command line tool") else { return }
        let publicKey = try RSAPublicKey(pem: key.publicPEM)
        let message = Array("signed message".utf8)
        let signature = try runOpenSSL(key.openssl, ["dgst", "-sha256", "-sign", key.privateKeyPath], input: message)
        #expect(publicKey.verifySHA256(signature: signature, message: message))
        #expect(!publicKey.verifySHA256(signature: signature, message: Array("signed messagE".utf8)))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!publicKey.verifySHA256(signature: flipped, message: message))
        #expect(!publicKey.verifySHA256(signature: [], message: message))
    }

    @Test func shortRSAKeysAreRefused() throws {
        let directory = try TemporaryDirectory("auth")
        guard
            let weak = try TestEnvironment.require(
                TestRSAKey(in: directory, name: "weak", bits: 1024),
                "the openssl command line tool")
        else { return }
        let error = #expect(throws: CryptoError.self) { try RSAPublicKey(pem: weak.publicPEM) }
        #expect(error?.code == .invalidKey && error?.message.contains("1024") == true)
    }
}
