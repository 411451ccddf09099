#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
@testable import IngestServer
import IngestSupport
import IngestTestSupport

/// The openssl command line tool, if installed.
func opensslPath() -> String? {
    for candidate in ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
    where FileManager.default.isExecutableFile(atPath: candidate) {
        return candidate
    }
    return nil
}

/// Runs openssl with `arguments`, feeding `input`, and returns stdout. Bounded to 30 s.
func runOpenSSL(_ openssl: String, _ arguments: [String], input: [UInt8] = []) throws -> [UInt8] {
    let result = try runProcess(openssl, arguments, input: input, timeout: 30)
    guard result.status == 0 else { throw TestSupportError("openssl \(arguments) failed (\(result.status)): \(result.errorOutput)") }
    return result.outputBytes
}

/// An RSA key pair made by the openssl CLI: private key file and public PEM text.
struct TestRSAKey {
    let openssl: String
    let privateKeyPath: String
    let publicPEM: String

    init?(in directory: TemporaryDirectory, name: String = "issuer", bits: Int = 2048) throws {
        guard let openssl = opensslPath() else { return nil }
        self.openssl = openssl
        privateKeyPath = directory.path("\(name).key.pem")
        _ = try runOpenSSL(
            openssl,
            [
                "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)",
                "-out", privateKeyPath,
            ])
        publicPEM = String(decoding: try runOpenSSL(openssl, ["pkey", "-in", privateKeyPath, "-pubout"]), as: UTF8.self)
    }

    /// An RS256 JWT over `claims`, signed by openssl.
    func sign(claims: JSONValue, header: JSONValue = .object([.init("alg", .string("RS256")), .init("typ", .string("JWT"))]))
        throws -> String
    {
        let input = Base64URL.encode(Array(header.jsonText.utf8)) + "." + Base64URL.encode(Array(claims.jsonText.utf8))
        let signature = try runOpenSSL(openssl, ["dgst", "-sha256", "-sign", privateKeyPath], input: Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }
}

/// A JWT with an arbitrary header and signature bytes, for forgery tests.
func rawJWT(header: JSONValue, claims: JSONValue, signature: [UInt8] = []) -> String {
    Base64URL.encode(Array(header.jsonText.utf8)) + "." + Base64URL.encode(Array(claims.jsonText.utf8)) + "."
        + Base64URL.encode(signature)
}
