#if canImport(Glibc)
import Glibc
#endif
import CCrypto
import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

@Suite(.serialized) struct AppAuthTests {
    static let jwtSecret = "0123456789abcdef0123456789abcdef-jwt-secret"
    static let config = """
        {"apps": [{"id": "auth", "developmentMode": true,
          "auth": {"anon-user": {}, "local-userpass": {"scryptLogN": 10}, "api-key": {},
                   "custom-token": {"keys": [{"algorithm": "HS256", "secret": "\(jwtSecret)"}]}}}]}
        """

    /// An HS256 JWT signed with the app's custom-token secret.
    static func jwt(subject: String) -> String {
        func base64url(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let now = Int(Date().timeIntervalSince1970)
        let header = base64url(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims = base64url(Data(#"{"sub":"\#(subject)","iat":\#(now),"exp":\#(now + 600)}"#.utf8))
        let input = Array("\(header).\(claims)".utf8)
        let key = Array(jwtSecret.utf8)
        var mac = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), input, input.count, &mac, &length)
        return "\(header).\(claims).\(base64url(Data(mac)))"
    }

    @Test func everyProviderLogsInAndTokensArePrivateFiles() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, config: Self.config)
        let app = makeTestApp(id: "auth", server: server, directory: directory.path)

        // Email/password: register, log in, wrong password, registered twice.
        try await app.emailPasswordAuth.registerUser(email: "ada@example.com", password: "correct horse")
        let ada = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "correct horse"))
        #expect(ada.provider == "local-userpass")
        #expect(ada.isLoggedIn)
        await #expect(throws: AppError.self) {
            try await app.emailPasswordAuth.registerUser(email: "ada@example.com", password: "correct horse")
        }
        do {
            _ = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "wrong password"))
            Issue.record("a wrong password logged in")
        } catch let error as AppError {
            #expect(error.code == .invalidCredentials)
            #expect(error.httpStatus == 401)
        }
        do {
            try await app.emailPasswordAuth.registerUser(email: "bob@example.com", password: "short")
            Issue.record("a short password was accepted")
        } catch let error as AppError {
            #expect(error.code == .badRequest)
            #expect(error.serverCode == "password_policy")
        }

        // API key created by the admin subcommand.
        let keyProcess = Process()
        keyProcess.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-server"))
        keyProcess.arguments = [
            "apikey", "create", "--app", "auth", "--name", "station-7",
            "--config", directory.path + "/ingest.json", "--data-dir", server.dataPath,
        ]
        let keyOut = Pipe()
        keyProcess.standardOutput = keyOut
        keyProcess.standardError = FileHandle.nullDevice
        try keyProcess.run()
        let key = try readLine(keyOut.fileHandleForReading.fileDescriptor, timeout: 20)
        #expect(reap(keyProcess, within: 60), "ingest-server apikey create did not exit within 60 s")
        #expect(keyProcess.terminationStatus == 0)
        let station = try await app.login(credentials: .userAPIKey(key))
        #expect(station.provider == "api-key")

        // Custom JWT.
        let sso = try await app.login(credentials: .jwt(token: Self.jwt(subject: "grace")))
        #expect(sso.provider == "custom-token")
        let ssoAgain = try await app.login(credentials: .jwt(token: Self.jwt(subject: "grace")))
        #expect(ssoAgain.id == sso.id)

        // Anonymous: the same user while logged in.
        let anonymous = try await app.login(credentials: .anonymous)
        #expect(try await app.login(credentials: .anonymous).id == anonymous.id)

        #expect(Set(app.allUsers.keys) == [ada.id, station.id, sso.id, anonymous.id])
        #expect(app.currentUser?.id == anonymous.id)
        for user in [ada, station, sso, anonymous] {
            let attributes = try FileManager.default.attributesOfItem(atPath: app.records.userDirectory(user.id) + "/user.json")
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }

        // A second App on the same metadata finds the users, logged in, with their tokens.
        let restarted = makeTestApp(id: "auth", server: server, directory: directory.path)
        #expect(Set(restarted.allUsers.keys) == Set(app.allUsers.keys))
        #expect(restarted.currentUser?.id == anonymous.id)
        #expect(restarted.allUsers[ada.id]?.refreshToken == ada.refreshToken)
        for user in restarted.allUsers.values { await user.session.stop() }

        // remove(): gone from allUsers; logOut(): logged out, refresh token revoked on the server.
        let removed = try await station.remove()
        #expect(removed.pendingObjects == 0)
        #expect(app.allUsers[station.id] == nil)
        let refresh = try #require(ada.refreshToken)
        try await ada.logOut()
        #expect(ada.state == .loggedOut)
        #expect(app.allUsers[ada.id] == nil)
        let revoked = try await app.request("POST", "/api/client/v2.0/auth/session", bearer: refresh)
        #expect(revoked.status == 401)
    }

    @Test func theAccessTokenIsRefreshedBeforeItExpires() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, config: Self.config)
        // A margin longer than the token's lifetime: every use refreshes first (capped at half the lifetime,
        // so a 30-minute token is refreshed after 15 minutes here).
        let app = makeTestApp(id: "auth", server: server, directory: directory.path) { $0.tokenRefreshMargin = 3_600 }
        let user = try await app.login(credentials: .anonymous)
        let first = try #require(user.accessToken)
        let claims = AccessTokenClaims(token: first)
        let issued = try #require(claims.issuedAt)
        let expires = try #require(claims.expiresAt)
        #expect(expires - issued == 1_800)
        #expect(!claims.needsRefresh(now: issued + 1, margin: 3_600))
        #expect(claims.needsRefresh(now: issued + 901, margin: 3_600))
        #expect(claims.needsRefresh(now: expires - 59, margin: 60))
        #expect(!claims.needsRefresh(now: expires - 61, margin: 60))
        // Concurrent refreshes share one request and one new token.
        async let a = user.refreshAccessToken(replacing: first)
        async let b = user.refreshAccessToken(replacing: first)
        let (tokenA, tokenB) = try await (a, b)
        #expect(tokenA == tokenB)
        #expect(user.accessToken == tokenA)
        // A revoked refresh token: the session waits for a new login and reports it.
        let errors = ErrorCollector()
        errors.install(on: app)
        let refresh = user.refreshToken ?? ""
        #expect(!refresh.isEmpty)
        let revoked = try await app.request("DELETE", "/api/client/v2.0/auth/session", bearer: refresh)
        #expect(revoked.status == 204)
        try user.change { $0.accessToken = "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.expired" }
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<10, perTransaction: 10)
        #expect(await eventuallyAsync(timeout: 20) { user.session.state == .waitingForAccessToken })
        #expect(errors.errors.contains { $0.code == .invalidSession })
        #expect(user.session.storeCounters?.pendingObjects == 10)
    }

    @Test func aPasswordUsersPendingDataIsUploadedAtTheirNextLogin() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, config: Self.config)
        let app = makeTestApp(id: "auth", server: server, directory: directory.path) { $0.sync.logOutUploadTimeout = 0.5 }
        try await app.emailPasswordAuth.registerUser(email: "ada@example.com", password: "correct horse")
        let ada = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "correct horse"))
        server.kill9()
        try writeReadings(try openSyncedRealm(ada), 0..<700, perTransaction: 70)
        let report = try await ada.logOut()
        #expect(report.pendingObjects == 700)
        #expect(ada.refreshToken == nil)
        #expect(ada.hasPendingDataOnDisk)
        try server.restart()
        let again = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "correct horse"))
        #expect(again === ada)
        try await again.session.wait(for: .upload, timeout: 30)
        try server.expectExactlyOnce("auth", table: "SyncReading", count: 700)
    }

    @Test func discardPendingDataIsTheOnlyWayToDeleteIt() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, config: Self.config)
        let app = makeTestApp(id: "auth", server: server, directory: directory.path)
        let user = try await app.login(credentials: .anonymous)
        user.session.suspend()
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<500, perTransaction: 100)
        #expect(try await user.discardPendingData() == 500)
        #expect(!user.hasPendingDataOnDisk)
        // The session runs again on an empty store.
        user.session.resume()
        try writeReadings(realm, 0..<5, perTransaction: 5)
        try await user.session.wait(for: .upload, timeout: 30)
        try server.expectExactlyOnce("auth", table: "SyncReading", count: 5)
    }
}
