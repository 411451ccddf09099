import Foundation
import Testing
import IngestTestSupport
@testable import DataIngest
import IngestSupport

/// Issue 18, item 2, in process: an anonymous login without a server creates
/// the user on the device; what it commits waits on disk; when the server
/// answers, the session logs the user in (the server's id from then on, the
/// folder kept) and uploads; a restarted app finds the same user.
@Suite(.serialized) struct OfflineFirstStartTests {
    @Test func aUserCreatedOfflineLogsInAndUploadsWhenTheServerAnswers() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        server.kill9()
        let app = makeTestApp(id: appId, server: server, directory: directory.path) { $0.exitUploadGracePeriod = 0 }
        let user = try await app.login(credentials: .anonymous)
        #expect(user.id.hasPrefix("local-"))
        #expect(user.isLoggedIn && user.accessToken == nil)
        #expect(app.currentUser === user)
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<5)
        // Logging in again offline returns the same user.
        #expect(try await app.login(credentials: .anonymous) === user)
        let folder = user.storeDirectory

        try server.restart()
        try await user.session.wait(for: .upload, timeout: 30)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 5)
        #expect(user.id.count == 24 && !user.id.hasPrefix("local-"))
        #expect(user.accessToken != nil && user.refreshToken != nil)
        #expect(user.storeDirectory == folder)
        #expect(app.allUsers[user.id] === user)

        // A restarted app restores that user, logged in, in the same folder.
        let restarted = makeTestApp(id: appId, server: server, directory: directory.path) { $0.exitUploadGracePeriod = 0 }
        let again = try await restarted.login(credentials: .anonymous)
        #expect(again.id == user.id)
        #expect(again.storeDirectory == folder)
        #expect(again.deviceId == user.deviceId)
        try writeReadings(try openSyncedRealm(again), 5..<8)
        try await again.session.wait(for: .upload, timeout: 30)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 8)
    }

    @Test func otherCredentialsStillNeedTheServer() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        server.kill9()
        let app = makeTestApp(id: appId, server: server, directory: directory.path) { $0.exitUploadGracePeriod = 0 }
        let error = await #expect(throws: AppError.self) {
            try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "correct horse"))
        }
        #expect(error?.code == .network)
        #expect(app.allUsers.isEmpty)
    }
}
