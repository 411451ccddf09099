#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport
import IngestTestSupport
import Testing

@testable import RealmSync

/// How a sync connection ends when nothing else ends it, against a real
/// `ingest-server` over a real socket: the idle timeout, and a graceful
/// shutdown (SIGTERM) with a session open and an upload in flight.
@Suite("Realm sync connections: idle timeout and graceful shutdown", .serialized)
struct RealmLifecycleTests {
    /// Reads until the server's close frame (at most 16 messages, `timeout` s each);
    /// the messages before it and its code and reason.
    static func untilClose(_ socket: RealmTestSocket, timeout: Double = 20) throws -> (
        messages: [ServerMessage], code: WebSocketCloseCode?, reason: String
    ) {
        var messages: [ServerMessage] = []
        for _ in 0..<16 {
            switch try socket.next(timeout: timeout) {
            case .binary(let bytes): messages.append(try ServerMessage(parsing: bytes))
            case .close(let code, let reason): return (messages, code, reason)
            case let other: throw RealmTestError("unexpected \(other)")
            }
        }
        throw RealmTestError("no close frame after 16 messages")
    }

    @Test("a silent connection is closed with 1001 after limits.syncIdleTimeoutSeconds; pings keep it open")
    func idleTimeout() throws {
        let server = try RealmTestServer(limits: #"{ "syncIdleTimeoutSeconds": 1.5 }"#)
        defer { server.stop() }
        let socket = try RealmEndpointCallTests.identifiedSession(server)
        // A ping every 0.5 s for 3 s, twice the timeout: each is answered.
        for round in 1...6 {
            usleep(500_000)
            try socket.send("ping \(round) 0")
            #expect(try socket.nextMessage(timeout: 5) == .pong(timestamp: Int64(round)))
        }
        let silentSince = monotonicNow()
        let end = try Self.untilClose(socket, timeout: 10)
        let waited = monotonicNow() - silentSince
        #expect(end.messages.isEmpty)
        #expect(end.code == .goingAway, "close code \(String(describing: end.code))")
        #expect(end.reason.contains("idle"), "\(end.reason)")
        #expect(waited >= 1.3 && waited < 8, "closed after \(waited) s of silence")
        // A new connection is served as before.
        let next = try RealmEndpointCallTests.identifiedSession(server)
        try next.send("ping 7 0")
        #expect(try next.nextMessage() == .pong(timestamp: 7))
    }

    /// The objects the recorded batch scenario's changesets create, up to `clientVersion`.
    static func objects(in changesets: [UploadChangeset], through clientVersion: UInt64) throws -> Int {
        try changesets.filter { $0.clientVersion <= clientVersion }.reduce(0) { count, changeset in
            count + (try ChangesetDecoder.decodeAll(changeset.data)).filter { $0.code == 2 }.count
        }
    }

    static func upload(_ changesets: ArraySlice<UploadChangeset>) -> [UInt8] {
        ClientMessage.upload(
            UploadMessage(
                session: 1, changesets: Array(changesets), progressClientVersion: changesets.last!.clientVersion,
                progressServerVersion: 0, lockedServerVersion: 0)
        ).encoded()
    }

    @Test(
        "SIGTERM with a session open: the client gets 1001, the acknowledged upload is durable, the one in flight is acknowledged or not stored, and its resend is stored once"
    )
    func gracefulShutdown() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let changesets = try Recordings.uploads("batch").flatMap { try $0.changesets() }
        try #require(changesets.count >= 3)
        let split = changesets.count / 2
        let token = try server.accessToken()
        let socket = try RealmTestSocket(port: server.port, token: token)
        let data = #"{"schemaVersion":1,"sessionReason":0}"#
        try socket.send("bind 1 \(data.utf8.count) 0 1 0", body: Array(data.utf8))
        guard case .ident(let file) = try socket.nextMessage() else { throw RealmTestError("no ident") }
        try socket.send("ident 1 \(file.fileIdent) \(file.fileIdentSalt) 0 0 0 0 0 2", body: Array("{}".utf8))
        try socket.send(Self.upload(changesets[..<split]))
        guard case .download(let first) = try socket.nextMessage() else { throw RealmTestError("no acknowledgement") }
        #expect(first.downloadClientVersion == changesets[split - 1].clientVersion)

        // The rest, and at once SIGTERM: the upload is in flight (read or not yet).
        try socket.send(Self.upload(changesets[split...]))
        kill(server.server.pid, SIGTERM)
        let end = try Self.untilClose(socket)
        #expect(end.code == .goingAway, "close code \(String(describing: end.code)): \(end.reason)")
        let acknowledged = end.messages.compactMap { message -> UInt64? in
            if case .download(let download) = message { return download.downloadClientVersion } else { return nil }
        }.max()
        #expect(end.messages.allSatisfy { if case .download = $0 { true } else { false } }, "\(end.messages)")
        #expect(server.server.waitForExit(timeout: 30) == 0)

        // Stored: exactly what was acknowledged.
        let through = acknowledged ?? first.downloadClientVersion
        #expect(acknowledged == nil || acknowledged == changesets.last!.clientVersion)
        #expect(try server.sqliteReadings().count == (try Self.objects(in: changesets, through: through)))

        // After a restart the client sends what was not acknowledged (realm-core
        // sends its whole history after the acknowledged version): stored once.
        try server.server.restart()
        let again = try RealmTestSocket(port: server.port, token: token)
        try again.send("bind 1 \(data.utf8.count) 0 0 0", body: Array(data.utf8))
        try again.send("ident 1 \(file.fileIdent) \(file.fileIdentSalt) 0 \(through) 0 0 0 2", body: Array("{}".utf8))
        try again.send(Self.upload(changesets[split...]))
        guard case .download(let last) = try again.nextMessage() else { throw RealmTestError("no acknowledgement") }
        #expect(last.downloadClientVersion == changesets.last!.clientVersion)
        try RealmEndpointTests.expectSinkHoldsExactly("batch", server: server)
    }
}
