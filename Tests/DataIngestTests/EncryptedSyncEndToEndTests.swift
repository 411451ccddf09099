#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

/// An encrypted client store against a real `ingest-server` process on
/// 127.0.0.1: the data waits encrypted on disk, the server receives the
/// standard gzip segments and writes every row exactly once.
@Suite(.serialized) struct EncryptedSyncEndToEndTests {
    static let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 9) })

    /// Whether any file under `directory` contains `needle`.
    static func anyFileContains(_ directory: String, _ needle: String) -> String? {
        let pattern = Array(needle.utf8)
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { continue }
            let bytes = [UInt8](data)
            guard bytes.count >= pattern.count else { continue }
            for i in 0...(bytes.count - pattern.count) where bytes[i] == pattern[0] && Array(bytes[i..<(i + pattern.count)]) == pattern {
                return name
            }
        }
        return nil
    }

    @Test func anEncryptedStoreUploadsEveryRowExactlyOnce() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path) {
            $0.segmentStore.encryptionKey = Self.key
        }
        let errors = ErrorCollector()
        errors.install(on: app)
        let user = try await app.login(credentials: .anonymous)
        server.kill9()  // the data waits on disk first

        var configuration = user.flexibleSyncConfiguration()
        configuration.objectTypes = [SyncReading.self]
        configuration.encryptionKey = Self.key  // the seed's way to ask for encryption: must match the store's key
        let realm = try await Realm(configuration: configuration)
        try writeReadings(realm, 0..<3_000, perTransaction: 50)
        await pauseAsync(0.5)
        #expect(user.session.storeCounters?.pendingObjects == 3_000)
        let store = try user.session.openStore()
        #expect(store.isEncrypted)
        try store.flush()
        #expect(!store.pendingSegments().isEmpty)
        // Pending data is never plaintext on disk (the payload is "reading N from thread 0").
        #expect(Self.anyFileContains(user.session.storeDirectory, "from thread") == nil)

        try server.restart()
        try await user.session.wait(for: .upload, timeout: 60)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 3_000)
        #expect(try server.queryText(appId, "SELECT payload FROM SyncReading WHERE seq = 1234") == ["reading 1234 from thread 0"])
        #expect(user.session.storeCounters?.pendingObjects == 0)
        #expect(errors.errors.allSatisfy { $0.code != .store }, "\(errors.errors)")
    }

    @Test func realmEncryptionKeysAreCheckedAgainstTheStore() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let app = makeTestApp(id: server.developmentAppId, server: server, directory: directory.path) {
            $0.segmentStore.encryptionKey = Self.key
        }
        let user = try await app.login(credentials: .anonymous)
        func open(_ key: Data?, synced: Bool = true) throws {
            var configuration =
                synced
                ? user.flexibleSyncConfiguration()
                : Realm.Configuration(fileURL: URL(fileURLWithPath: directory.path + "/local.realm"))
            configuration.objectTypes = synced ? [SyncReading.self] : [LocalNote.self]
            configuration.encryptionKey = key
            _ = try Realm(configuration: configuration)
        }
        try open(nil)
        try open(Self.key)
        #expect { try open(Data(repeating: 7, count: 32)) } throws: { ($0 as? RealmError)?.code == .encryptionKeyMismatch }
        #expect { try open(Data(repeating: 7, count: 64)) } throws: { error in
            guard let error = error as? RealmError else { return false }
            return error.code == .invalidEncryptionKey && error.message.contains("32 bytes") && error.message.contains("64-byte")
        }
        // Local realms are not encrypted by this release: refused, never stored as plaintext.
        #expect { try open(Self.key, synced: false) } throws: { error in
            guard let error = error as? RealmError else { return false }
            return error.code == .encryptionNotSupported && error.message.contains("not encrypted")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/local.realm"))
        try open(nil, synced: false)
    }
}

/// A local type for the encryption checks.
final class LocalNote: Object {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var text: String
}
