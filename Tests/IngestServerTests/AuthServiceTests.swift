import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestSupport
import IngestTestSupport

@Suite struct AuthServiceTests {
    /// A service over a fresh state directory with every provider enabled on "app-one"
    /// and only anonymous on "app-two". scrypt cost is lowered to keep tests fast.
    func makeService(
        _ directory: TemporaryDirectory, clock: ManualClock, rotate: Bool = false,
        customSecret: [UInt8] = Array("issuer-shared-secret-with-enough-bytes".utf8)
    ) throws -> AuthService {
        var one = AppConfiguration(id: "app-one")
        one.auth = AuthConfiguration(
            anonymous: AnonymousSettings(),
            userPassword: UserPasswordSettings(
                minPasswordLength: 8, passwordHashing: .init(logN: 10), maxFailedLogins: 3,
                lockoutSeconds: 60),
            apiKey: APIKeySettings(),
            customToken: CustomTokenSettings(keys: [.init(material: .hs256(secret: customSecret))], audience: ["app-one"]))
        one.rotateRefreshTokens = rotate
        var two = AppConfiguration(id: "app-two")
        two.auth.anonymous = AnonymousSettings()
        let configuration = ServerConfiguration(stateDirectory: directory.path, apps: [one, two])
        return try AuthService(configuration: configuration, clock: clock.dateFunction)
    }

    func body(_ json: String) -> [UInt8] { Array(json.utf8) }

    @Test func anonymousLoginIssuesScopedTokensAndNewUsers() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        let auth = try makeService(directory, clock: clock)
        let first = try auth.login(appId: "app-one", provider: "anon-user", body: body("{}"))
        let second = try auth.login(appId: "app-one", provider: "anon-user", body: [])
        #expect(first.userId != second.userId)
        #expect(first.deviceId != second.deviceId)
        #expect((try? ObjectId(hex: first.userId)) != nil)
        let claims = try auth.verifyAccessToken(first.accessToken, appId: "app-one")
        #expect(claims.userId == first.userId && claims.deviceId == first.deviceId)
        #expect(claims.expiresAt - claims.issuedAt == 1800)
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.verifyAccessToken(first.accessToken, appId: "app-two")
            })?.httpStatus == 403)
        let json = try JSONValue(parsing: first.jsonBody, options: .strict())
        #expect(json["access_token"]?.stringValue == first.accessToken)
        #expect(json["refresh_token"]?.stringValue == first.refreshToken)
        #expect(json["user_id"]?.stringValue == first.userId)
        #expect(json["device_id"]?.stringValue == first.deviceId)
    }

    @Test func concurrentLoginsAndRefreshesAreConsistent() async throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock())
        let userIds = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var ids: [String] = []
                    for _ in 0..<10 {
                        let login = try auth.login(appId: "app-one", provider: "anon-user", body: [])
                        _ = try auth.refresh(refreshToken: login.refreshToken)
                        _ = try auth.verifyAccessToken(login.accessToken, appId: "app-one")
                        ids.append(login.userId)
                    }
                    return ids
                }
            }
            var all: [String] = []
            for try await ids in group { all += ids }
            return all
        }
        #expect(userIds.count == 80 && Set(userIds).count == 80)
    }

    @Test func deviceIdIsKeptWhenTheClientSendsOne() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock())
        let device = ObjectId.generate().hex
        let login = try auth.login(
            appId: "app-one", provider: "anon-user",
            body: body(#"{"options": {"device": {"deviceId": "\#(device)"}}}"#))
        #expect(login.deviceId == device)
        #expect(try auth.verifyAccessToken(login.accessToken, appId: "app-one").deviceId == device)
    }

    @Test func accessTokenExpiresWithTheClock() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        let auth = try makeService(directory, clock: clock)
        let login = try auth.login(appId: "app-one", provider: "anon-user", body: [])
        // Verified tokens are remembered, but only their signature and claims: the times are checked every time.
        #expect(try auth.verifyAccessToken(login.accessToken, appId: "app-one").userId == login.userId)
        let otherApp = #expect(throws: AuthError.self) { try auth.verifyAccessToken(login.accessToken, appId: "app-two") }
        #expect(otherApp?.code == .wrongApp)
        clock.advance(by: 1800 + 30)
        #expect(try auth.verifyAccessToken(login.accessToken, appId: "app-one").userId == login.userId)
        clock.advance(by: 1)
        let error = #expect(throws: AuthError.self) { try auth.verifyAccessToken(login.accessToken, appId: "app-one") }
        #expect(error?.code == .expiredToken)
        // The refresh token still works and gives a fresh access token.
        let session = try auth.refresh(refreshToken: login.refreshToken)
        #expect(session.refreshToken == nil)
        #expect(try auth.verifyAccessToken(session.accessToken, appId: "app-one").userId == login.userId)
    }

    @Test func refreshLogoutAndRevocation() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        let auth = try makeService(directory, clock: clock)
        let login = try auth.login(appId: "app-one", provider: "anon-user", body: [])
        let session = try auth.refresh(refreshToken: login.refreshToken)
        let claims = try auth.verifyAccessToken(session.accessToken, appId: "app-one")
        #expect(claims.userId == login.userId && claims.deviceId == login.deviceId)
        try auth.logout(refreshToken: login.refreshToken)
        try auth.logout(refreshToken: login.refreshToken)  // idempotent
        let revoked = #expect(throws: AuthError.self) { try auth.refresh(refreshToken: login.refreshToken) }
        #expect(revoked?.code == .invalidToken && revoked?.httpStatus == 401)
        #expect((#expect(throws: AuthError.self) { try auth.refresh(refreshToken: "unknown") })?.code == .invalidToken)
        #expect((#expect(throws: AuthError.self) { try auth.logout(refreshToken: "unknown") })?.code == .invalidToken)
        // The stored form is the SHA-256 of the token, never the token.
        let stored = try auth.store.refreshToken(hash: Crypto.sha256(Array(login.refreshToken.utf8)))
        #expect(stored?.revokedAt == clock.wholeSeconds)
    }

    @Test func refreshTokenExpiresAfterItsLifetime() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        let auth = try makeService(directory, clock: clock)
        let login = try auth.login(appId: "app-one", provider: "anon-user", body: [])
        clock.advance(by: Double(60 * 86_400 - 10))
        _ = try auth.refresh(refreshToken: login.refreshToken)
        clock.advance(by: 20)
        #expect(
            (#expect(throws: AuthError.self) { try auth.refresh(refreshToken: login.refreshToken) })?.code
                == .expiredToken)
    }

    @Test func rotationReplacesTheRefreshToken() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock(), rotate: true)
        let login = try auth.login(appId: "app-one", provider: "anon-user", body: [])
        let first = try auth.refresh(refreshToken: login.refreshToken)
        let replacement = try #require(first.refreshToken)
        #expect(replacement != login.refreshToken)
        #expect((try JSONValue(parsing: first.jsonBody, options: .strict()))["refresh_token"]?.stringValue == replacement)
        let second = try auth.refresh(refreshToken: replacement)
        #expect(second.refreshToken != nil && second.refreshToken != replacement)
        // Its replacement was used: the first token is refused from now on.
        #expect(
            (#expect(throws: AuthError.self) { try auth.refresh(refreshToken: login.refreshToken) })?.code
                == .invalidToken)
    }

    /// A client that lost the answer to a rotating refresh (killed before it
    /// saved the new token, or its disk was full) presents the old token
    /// again and gets the same replacement, until that replacement is used.
    /// Found by the soak test: the client was locked out, its data stuck on
    /// the device (the server had revoked the only refresh token it kept).
    @Test func aRotatedTokenWhoseAnswerWasLostWorksUntilItsReplacementIsUsed() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock(), rotate: true)
        let login = try auth.login(appId: "app-one", provider: "anon-user", body: [])
        let lost = try auth.refresh(refreshToken: login.refreshToken)  // never saved by the client
        let again = try auth.refresh(refreshToken: login.refreshToken)
        let replacement = try #require(again.refreshToken)
        #expect(replacement == lost.refreshToken)
        #expect(try auth.verifyAccessToken(again.accessToken, appId: "app-one").userId == login.userId)
        // The replacement is used: the old token is refused from then on.
        let next = try auth.refresh(refreshToken: replacement)
        let current = try #require(next.refreshToken)
        #expect(current != replacement)
        #expect(
            (#expect(throws: AuthError.self) { try auth.refresh(refreshToken: login.refreshToken) })?.code
                == .invalidToken)
        // A logout revokes the current token, and so ends the grace of the one before it.
        try auth.logout(refreshToken: current)
        for token in [current, replacement, login.refreshToken] {
            #expect((#expect(throws: AuthError.self) { try auth.refresh(refreshToken: token) })?.code == .invalidToken)
        }
        // Without rotation a revoked token is never accepted again.
        let plain = try makeService(try TemporaryDirectory("auth"), clock: ManualClock())
        let other = try plain.login(appId: "app-one", provider: "anon-user", body: [])
        try plain.logout(refreshToken: other.refreshToken)
        #expect(
            (#expect(throws: AuthError.self) { try plain.refresh(refreshToken: other.refreshToken) })?.code
                == .invalidToken)
    }

    @Test func stateSurvivesARestart() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        var auth: AuthService? = try makeService(directory, clock: clock)
        let login = try #require(auth).login(appId: "app-one", provider: "anon-user", body: [])
        auth?.store.close()
        auth = nil
        // The generated signing secret and the refresh token are in the state database.
        let restarted = try makeService(directory, clock: clock)
        #expect(try restarted.verifyAccessToken(login.accessToken, appId: "app-one").userId == login.userId)
        #expect(try !restarted.refresh(refreshToken: login.refreshToken).accessToken.isEmpty)
    }

    @Test func emailPasswordRegistrationAndLogin() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock())
        let userId = try auth.register(appId: "app-one", body: body(#"{"email": "Ada@Example.org", "password": "analytical-engine"}"#))
        let login = try auth.login(
            appId: "app-one", provider: "local-userpass",
            body: body(#"{"username": "ada@example.org", "password": "analytical-engine"}"#))
        #expect(login.userId == userId)
        // The same user on every login.
        let again = try auth.login(
            appId: "app-one", provider: "local-userpass",
            body: body(#"{"username": " ADA@example.org", "password": "analytical-engine"}"#))
        #expect(again.userId == userId)

        func loginCode(_ json: String) -> AuthError.Code? {
            (#expect(throws: AuthError.self) { try auth.login(appId: "app-one", provider: "local-userpass", body: body(json)) })?.code
        }
        #expect(loginCode(#"{"username": "ada@example.org", "password": "analytical-engin"}"#) == .invalidCredentials)
        #expect(loginCode(#"{"username": "bob@example.org", "password": "analytical-engine"}"#) == .invalidCredentials)
        #expect(loginCode(#"{"username": "ada@example.org"}"#) == .badRequest)
        #expect(loginCode("not json") == .badRequest)
        #expect(loginCode("[1]") == .badRequest)

        let duplicate = #expect(throws: AuthError.self) {
            try auth.register(appId: "app-one", email: "ada@example.org", password: "something-else")
        }
        #expect(duplicate?.code == .alreadyExists && duplicate?.httpStatus == 409)
        let short = #expect(throws: AuthError.self) { try auth.register(appId: "app-one", email: "b@example.org", password: "short") }
        #expect(short?.code == .passwordPolicy && short?.httpStatus == 400)
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.register(appId: "app-one", email: "not-an-email", password: "long enough password")
            })?.code == .badRequest)
        // Provider disabled on app-two.
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.register(appId: "app-two", email: "c@example.org", password: "long enough password")
            })?.httpStatus == 403)

        // Only the scrypt hash is stored.
        let stored = try #require(try auth.store.user(id: userId))
        #expect(stored.passwordHash?.hasPrefix("$scrypt$ln=10,r=8,p=1$") == true)
        #expect(stored.passwordHash?.contains("analytical") == false)
    }

    @Test func repeatedFailedPasswordLoginsAreThrottled() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        let auth = try makeService(directory, clock: clock)
        try auth.register(appId: "app-one", email: "kim@example.org", password: "the right password")
        let wrong = body(#"{"username": "kim@example.org", "password": "a wrong password"}"#)
        let right = body(#"{"username": "kim@example.org", "password": "the right password"}"#)
        for _ in 0..<3 {
            #expect(
                (#expect(throws: AuthError.self) { try auth.login(appId: "app-one", provider: "local-userpass", body: wrong) })?
                    .code == .invalidCredentials)
        }
        // Locked now, even with the right password; other users are not affected.
        let locked = #expect(throws: AuthError.self) { try auth.login(appId: "app-one", provider: "local-userpass", body: right) }
        #expect(locked?.httpStatus == 429 && locked?.code == .tooManyRequests)
        #expect(locked?.retryAfterSeconds == 60)
        try auth.register(appId: "app-one", email: "lee@example.org", password: "another password")
        _ = try auth.login(
            appId: "app-one", provider: "local-userpass",
            body: body(#"{"username": "lee@example.org", "password": "another password"}"#))
        clock.advance(by: 61)
        #expect(try !auth.login(appId: "app-one", provider: "local-userpass", body: right).accessToken.isEmpty)
    }

    @Test func oldRevokedAndExpiredRefreshTokensArePurgedAtStart() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        var auth: AuthService? = try makeService(directory, clock: clock)
        let revoked = try #require(auth).login(appId: "app-one", provider: "anon-user", body: [])
        let live = try #require(auth).login(appId: "app-one", provider: "anon-user", body: [])
        try auth?.logout(refreshToken: revoked.refreshToken)
        auth?.store.close()
        auth = nil
        clock.advance(by: 8 * 86_400)
        let restarted = try makeService(directory, clock: clock)
        #expect(try restarted.store.refreshToken(hash: Crypto.sha256(Array(revoked.refreshToken.utf8))) == nil)
        #expect(try !restarted.refresh(refreshToken: live.refreshToken).accessToken.isEmpty)
    }

    @Test func stateFilesArePrivate() throws {
        let directory = try TemporaryDirectory("auth")
        let state = directory.path("state")
        let auth = try AuthService(configuration: ServerConfiguration(stateDirectory: state, apps: [AppConfiguration(id: "a")]))
        defer { auth.store.close() }
        let directoryMode = try FileManager.default.attributesOfItem(atPath: state)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: auth.store.path)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        #expect(fileMode == 0o600)
    }

    @Test func unknownAppProviderAndDisabledProvider() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock())
        let unknownApp = #expect(throws: AuthError.self) { try auth.login(appId: "nope", provider: "anon-user", body: []) }
        #expect(unknownApp?.code == .unknownApp && unknownApp?.httpStatus == 404)
        let unknownProvider = #expect(throws: AuthError.self) { try auth.login(appId: "app-one", provider: "oauth2-google", body: []) }
        #expect(unknownProvider?.code == .unknownProvider && unknownProvider?.httpStatus == 404)
        let disabled = #expect(throws: AuthError.self) {
            try auth.login(appId: "app-two", provider: "api-key", body: body(#"{"key": "x"}"#))
        }
        #expect(disabled?.code == .providerDisabled && disabled?.httpStatus == 403)
        #expect((#expect(throws: AuthError.self) { try auth.verifyAccessToken("x.y.z", appId: "nope") })?.httpStatus == 404)
        let parsed = try JSONValue(parsing: try #require(disabled).jsonBody, options: .strict())
        #expect(parsed["error_code"]?.stringValue == "provider_disabled")
    }

    @Test func disabledUserCannotLogInOrRefresh() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock())
        try auth.register(appId: "app-one", email: "eve@example.org", password: "long enough password")
        let login = try auth.login(
            appId: "app-one", provider: "local-userpass",
            body: body(#"{"username": "eve@example.org", "password": "long enough password"}"#))
        #expect(try auth.store.setUserDisabled(id: login.userId, true))
        #expect((#expect(throws: AuthError.self) { try auth.refresh(refreshToken: login.refreshToken) })?.code == .userDisabled)
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.login(
                    appId: "app-one", provider: "local-userpass",
                    body: body(#"{"username": "eve@example.org", "password": "long enough password"}"#))
            })?.code == .userDisabled)
    }

    @Test func apiKeyCreateLoginRevokeAndHashedAtRest() throws {
        let directory = try TemporaryDirectory("auth")
        let auth = try makeService(directory, clock: ManualClock())
        let created = try auth.createAPIKey(appId: "app-one", name: "weather-station-7")
        #expect(created.key.hasPrefix(AuthService.apiKeyPrefix))
        #expect(created.key.utf8.count == AuthService.apiKeyPrefix.utf8.count + 43)
        let login = try auth.login(appId: "app-one", provider: "api-key", body: body(#"{"key": "\#(created.key)"}"#))
        #expect(login.userId == created.record.userId)
        let again = try auth.login(appId: "app-one", provider: "api-key", body: body(#"{"key": "\#(created.key)"}"#))
        #expect(again.userId == login.userId)
        #expect(
            (#expect(throws: AuthError.self) { try auth.createAPIKey(appId: "app-one", name: "weather-station-7") })?.code
                == .alreadyExists)
        #expect((#expect(throws: AuthError.self) { try auth.createAPIKey(appId: "nope", name: "k") })?.code == .unknownApp)
        for badName in ["", "tab\tname", "line\nbreak", String(repeating: "x", count: 101)] {
            #expect(
                (#expect(throws: AuthError.self) { try auth.createAPIKey(appId: "app-one", name: badName) })?.code
                    == .badRequest)
        }
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.login(appId: "app-one", provider: "api-key", body: body(#"{"key": "dik_wrong"}"#))
            })?.code == .invalidCredentials)
        #expect(try auth.store.apiKeys(appId: "app-one").map(\.name) == ["weather-station-7"])

        // The raw key is nowhere in the state database: scan every text and blob cell of every table.
        let connection = try SQLiteConnection(path: auth.store.path)
        defer { connection.close() }
        let tables = try connection.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.first?.text }
        #expect(tables.contains("api_keys"))
        let keyBytes = Array(created.key.utf8)
        let secretPart = Array(created.key.dropFirst(AuthService.apiKeyPrefix.count).utf8)
        var cells = 0
        for table in tables {
            for row in try connection.query("SELECT * FROM \"\(table)\"") {
                for cell in row {
                    cells += 1
                    let bytes = cell.text.map { Array($0.utf8) } ?? cell.blob ?? []
                    #expect(!contains(bytes, secretPart), "raw API key found in table \(table)")
                }
            }
        }
        #expect(cells > 0)
        let hashed = try connection.query("SELECT count(*) FROM api_keys WHERE key_hash = ?", [.blob(Crypto.sha256(keyBytes))])
        #expect(hashed.first?.first?.integer == 1)

        // Revocation ends logins and the key's sessions.
        #expect(try auth.revokeAPIKey(appId: "app-one", name: "weather-station-7"))
        #expect(try !auth.revokeAPIKey(appId: "app-one", name: "weather-station-7"))
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.login(appId: "app-one", provider: "api-key", body: body(#"{"key": "\#(created.key)"}"#))
            })?.code == .invalidCredentials)
        #expect((#expect(throws: AuthError.self) { try auth.refresh(refreshToken: login.refreshToken) })?.code == .invalidToken)
    }

    @Test func apiKeyOfAnotherAppIsRejected() throws {
        let directory = try TemporaryDirectory("auth")
        var one = AppConfiguration(id: "app-one")
        one.auth.apiKey = APIKeySettings()
        var two = AppConfiguration(id: "app-two")
        two.auth.apiKey = APIKeySettings()
        let auth = try AuthService(configuration: ServerConfiguration(stateDirectory: directory.path, apps: [one, two]))
        let key = try auth.createAPIKey(appId: "app-one", name: "k").key
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.login(appId: "app-two", provider: "api-key", body: body(#"{"key": "\#(key)"}"#))
            })?.code == .invalidCredentials)
    }

    @Test func customTokenLoginMapsSubjectToOneUser() throws {
        let directory = try TemporaryDirectory("auth")
        let clock = ManualClock()
        let secret = Array("issuer-shared-secret-with-enough-bytes".utf8)
        let auth = try makeService(directory, clock: clock, customSecret: secret)
        func token(_ subject: String, audience: String = "app-one") -> String {
            JWT.signHS256(
                claims: .object([
                    .init("sub", .string(subject)), .init("aud", .string(audience)),
                    .init("iat", .integer(clock.wholeSeconds)), .init("exp", .integer(clock.wholeSeconds + 300)),
                ]), secret: secret)
        }
        let first = try auth.login(appId: "app-one", provider: "custom-token", body: body(#"{"token": "\#(token("alice"))"}"#))
        let second = try auth.login(appId: "app-one", provider: "custom-token", body: body(#"{"token": "\#(token("alice"))"}"#))
        let other = try auth.login(appId: "app-one", provider: "custom-token", body: body(#"{"token": "\#(token("bob"))"}"#))
        #expect(first.userId == second.userId)
        #expect(first.userId != other.userId)
        let wrongAudience = #expect(throws: AuthError.self) {
            try auth.login(appId: "app-one", provider: "custom-token", body: body(#"{"token": "\#(token("alice", audience: "x"))"}"#))
        }
        #expect(wrongAudience?.httpStatus == 401 && wrongAudience?.appId == "app-one")
        #expect(
            (#expect(throws: AuthError.self) {
                try auth.login(appId: "app-one", provider: "custom-token", body: body("{}"))
            })?.code == .badRequest)
    }
}

/// Whether `haystack` contains `needle` as a contiguous run.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
        return true
    }
    return false
}
