import Foundation
import IngestSupport

/// What the client reads from an access token (a JWT): when it was issued
/// and when it expires. The signature is the server's business.
struct AccessTokenClaims: Sendable, Hashable {
    var issuedAt: TimeInterval?
    var expiresAt: TimeInterval?

    init(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return }
        guard let bytes = Base64URL.decode(parts[1]),
            let claims = try? JSONValue(parsing: bytes, options: JSONParsingOptions(maxDepth: 16)),
            case .object = claims
        else { return }
        issuedAt = claims["iat"]?.doubleValue
        expiresAt = claims["exp"]?.doubleValue
    }

    /// Whether the token should be refreshed now, `margin` seconds (at most
    /// half the lifetime) before it expires.
    func needsRefresh(now: TimeInterval, margin: TimeInterval) -> Bool {
        guard let expiresAt else { return false }
        var effective = margin
        if let issuedAt, expiresAt > issuedAt { effective = min(margin, (expiresAt - issuedAt) / 2) }
        return now >= expiresAt - effective
    }
}
