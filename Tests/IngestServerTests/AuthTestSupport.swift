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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: openssl)
    process.arguments = arguments
    let stdin = Pipe()
    let stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = FileHandle.nullDevice
    try process.run()
    stdin.fileHandleForWriting.write(Data(input))
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let deadline = Date().addingTimeInterval(30)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw CocoaError(.executableLoad)
    }
    guard process.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
    return [UInt8](output)
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
