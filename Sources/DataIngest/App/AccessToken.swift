import Foundation
import IngestCore
import IngestSupport

/// What the client reads from an access token (a JWT): when it was issued
/// and when it expires. The signature is the server's business.
struct AccessTokenClaims: Sendable, Hashable {
    var issuedAt: TimeInterval?
    var expiresAt: TimeInterval?

    init(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
              let text = String(validating: payload, as: UTF8.self),
              case .object(let claims)? = try? JSONValue(parsing: text, maxDepth: 8) else { return }
        func seconds(_ name: String) -> TimeInterval? {
            guard case .number(let lexeme)? = claims.first(where: { $0.key == name })?.value else { return nil }
            return TimeInterval(lexeme)
        }
        issuedAt = seconds("iat")
        expiresAt = seconds("exp")
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
