// libFuzzer harness: JWT parsing and the two verifiers (the server's own
// access tokens and third-party custom tokens). Built and run by
// Scripts/fuzz.sh (not a SwiftPM target).
//
// First byte: 0 = the rest is a token as a client sends it; 1 = the rest is
// "header JSON" NUL "claims JSON", signed here with the harness's HS256 key,
// so the claim checks after the signature (exp, iat, nbf, aud, lifetime) are
// reached with hostile claim values; 2 = the rest is a login request body,
// parsed as AuthService does (IngestSupport's JSON parser with the strict
// options: the bytes path, which checks UTF-8, rejects duplicate keys and
// reports lines and columns).
@testable import IngestServer
import IngestSupport

let secret = Array("fuzz-secret-0123456789abcdef0123".utf8)
let codec = AccessTokenCodec(appId: "fuzz-app", secret: secret)
let custom: CustomJWTVerifier = {
    var settings = CustomTokenSettings(keys: [CustomTokenSettings.Key(material: .hs256(secret: secret), keyId: "k1")])
    settings.audience = ["fuzz-app"]
    settings.issuer = "https://issuer.example"
    return CustomJWTVerifier(settings: settings)
}()
let now: Int64 = 1_800_000_000

func verify(_ token: String) {
    if let jwt = try? JWT(parsing: token) {
        for name in ["exp", "iat", "nbf"] { _ = jwt.numericDate(name) }
    }
    _ = try? codec.verify(token, now: now)
    _ = try? custom.verify(token, now: now)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let rest = UnsafeBufferPointer(start: data + 1, count: size - 1)
    switch data[0] % 3 {
    case 0:
        verify(String(decoding: rest, as: UTF8.self))
    case 2:
        if let value = try? JSONValue(parsing: Array(rest), options: .strict(maxDepth: 16)) {
            _ = value.jsonText
            _ = value["token"]?.stringValue
        }
    default:
        let parts = rest.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return 0 }
        let input = Base64URL.encode(parts[0]) + "." + Base64URL.encode(parts[1])
        let mac = Crypto.hmacSHA256(key: secret, message: Array(input.utf8))
        verify(input + "." + Base64URL.encode(mac))
    }
    return 0
}
