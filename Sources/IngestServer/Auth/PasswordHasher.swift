import Foundation
import IngestSupport

/// Hashes passwords with scrypt and verifies them, storing the parameters
/// with each hash so that the cost can be raised later without breaking
/// existing users.
///
/// The stored form is `$scrypt$ln=15,r=8,p=1$<salt base64url>$<hash base64url>`.
///
/// ```swift
/// let hasher = PasswordHasher()
/// let stored = try hasher.hash("correct horse battery staple")
/// try hasher.verify("correct horse battery staple", against: stored) // true
/// ```
package struct PasswordHasher: Sendable {
    /// The scrypt cost parameters used for new hashes.
    package struct Parameters: Sendable, Hashable {
        /// N = 2^logN. Default 15 (about 32 MiB and 50–150 ms per hash).
        package var logN: Int = 15
        /// Block size. Default 8.
        package var r: Int = 8
        /// Parallelization. Default 1.
        package var p: Int = 1

        package init(logN: Int = 15, r: Int = 8, p: Int = 1) {
            self.logN = logN
            self.r = r
            self.p = p
        }
    }

    /// Parameters for new hashes; existing hashes keep their own.
    package var parameters: Parameters

    package init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
    }

    /// Hashes `password` with a fresh random 16-byte salt.
    package func hash(_ password: String) throws(CryptoError) -> String {
        let salt = try Crypto.randomBytes(16)
        let derived = try Crypto.scrypt(
            password: Array(password.utf8), salt: salt, logN: parameters.logN,
            r: parameters.r, p: parameters.p, length: 32)
        return "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$"
            + Base64URL.encode(salt) + "$" + Base64URL.encode(derived)
    }

    /// Whether `password` matches the stored hash (compared in constant time).
    ///
    /// - Throws: ``CryptoError`` with code `.invalidParameters` if `stored` is
    ///   not a hash this type wrote.
    package func verify(_ password: String, against stored: String) throws(CryptoError) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt",
            let salt = Base64URL.decode(parts[3]), let expected = Base64URL.decode(parts[4]), !expected.isEmpty
        else { throw CryptoError(.invalidParameters, "stored password hash has an unknown format") }
        var values: [String: Int] = [:]
        for item in parts[2].split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int(pair[1]) else {
                throw CryptoError(.invalidParameters, "stored password hash has malformed parameters")
            }
            values[String(pair[0])] = value
        }
        guard let logN = values["ln"], let r = values["r"], let p = values["p"] else {
            throw CryptoError(.invalidParameters, "stored password hash lacks ln, r or p")
        }
        let derived = try Crypto.scrypt(
            password: Array(password.utf8), salt: salt, logN: logN, r: r, p: p,
            length: expected.count)
        return Crypto.constantTimeEqual(derived, expected)
    }
}
