import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestSupport
import IngestTestSupport

/// Issue 18, item 4: the signature is checked before the scope. A token that
/// no configured app signed is `401 invalid_token` whatever its `aud` says;
/// only a token that another app of this server really signed is
/// `403 wrong_app` (permanent for this app).
@Suite struct AuthTokenOrderTests {
    let now: Int64 = 1_800_000_000

    func makeService(_ directory: TemporaryDirectory) throws -> AuthService {
        var one = AppConfiguration(id: "app-one")
        one.auth.anonymous = AnonymousSettings()
        one.signingSecret = Array("the signing secret of app one, 32+ bytes".utf8)
        var two = AppConfiguration(id: "app-two")
        two.auth.anonymous = AnonymousSettings()
        two.signingSecret = Array("the signing secret of app two, 32+ bytes".utf8)
        let configuration = ServerConfiguration(stateDirectory: directory.path, apps: [one, two])
        let clock = ManualClock()
        return try AuthService(configuration: configuration, clock: clock.dateFunction)
    }

    @Test func aForgedTokenIsInvalidWhateverAppItNames() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory)
        let forger = Array("a key no app of this server has, 32+ bytes".utf8)
        for audience in ["app-two", "no-such-app", "app-one"] {
            let forged = AccessTokenCodec(appId: audience, secret: forger)
                .issue(
                    userId: "aaaaaaaaaaaaaaaaaaaaaaaa", deviceId: "bbbbbbbbbbbbbbbbbbbbbbbb",
                    now: Int64(Date().timeIntervalSince1970))
            let error = #expect(throws: AuthError.self) { try auth.verifyAccessToken(forged, appId: "app-one") }
            #expect(error?.code == .invalidToken, "aud \(audience): \(String(describing: error))")
            #expect(error?.httpStatus == 401)
        }
    }

    @Test func aTokenAnotherAppSignedIsForbidden() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory)
        let login = try auth.login(appId: "app-two", provider: "anon-user", body: [])
        let error = #expect(throws: AuthError.self) { try auth.verifyAccessToken(login.accessToken, appId: "app-one") }
        #expect(error?.code == .wrongApp)
        #expect(error?.httpStatus == 403)
    }

    @Test func theCodecAloneCallsABadSignatureInvalid() {
        let secret = Array("the signing secret of app one, 32+ bytes".utf8)
        let other = AccessTokenCodec(appId: "app-two", secret: Array("another secret entirely, 32 bytes+".utf8))
        let token = other.issue(userId: "u", deviceId: "d", now: now)
        let codec = AccessTokenCodec(appId: "app-one", secret: secret)
        #expect((#expect(throws: AuthError.self) { try codec.verify(token, now: now) })?.code == .invalidToken)
    }
}
