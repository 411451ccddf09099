import Foundation

/// What the client reads from an access token (a JWT): when it was issued
/// and when it expires. The signature is the server's business.
struct AccessTokenClaims: Sendable, Hashable {
    var issuedAt: TimeInterval?
    var expiresAt: TimeInterval?

    init(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        issuedAt = (object["iat"] as? NSNumber)?.doubleValue
        expiresAt = (object["exp"] as? NSNumber)?.doubleValue
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
