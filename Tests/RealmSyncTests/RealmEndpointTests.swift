import Foundation
import IngestCore
import IngestSupport
import IngestTestSupport
import Testing

@testable import RealmSync

/// The recorded Realm client's traffic replayed against a real
/// `ingest-server` process over a real socket: the HTTP calls before
/// syncing, then every WebSocket message of each scenario, the server's
/// answers checked at each step (message kinds, cursors), and the sink
/// holding exactly `expected.jsonl`.
@Suite("Realm sync endpoint against a real ingest-server", .serialized)
struct RealmEndpointTests {
    // MARK: - Replay

    /// The client file the server gave in a first session, for the next ones.
    final class ClientFile {
        var ident: UInt64?
        var salt: Int64 = 0
    }

    /// Replays one transcript; with `dropAfterUpload`, the connection is
    /// dropped right after the first upload is sent (no acknowledgement
    /// awaited), and `afterDrop` runs then (a server restart).
    static func replay(
        _ transcript: URL, port: () -> UInt16, file: ClientFile, token: String,
        dropAfterUpload: Bool = false
    ) throws {
        var socket: RealmTestSocket?
        var lastServerVersion: UInt64 = 0
        for event in try Recordings.events(transcript) {
            switch (event.direction, event.kind) {
            case ("c2s", "http-upgrade"):
                let opened = try RealmTestSocket(port: port(), token: token)
                #expect(opened.upgrade.status == 101, "upgrade: \(opened.upgrade.status) \(opened.upgrade.text)")
                socket = opened
            case ("s2c", "http-upgrade-response"):
                #expect(socket?.upgrade.header("Sec-WebSocket-Protocol") == event.fields["chosen_protocol"] as? String)
            case ("c2s", "message"):
                guard let socket else { throw RealmTestError("a message before the upgrade") }
                var head = (event.fields["head"] as? String ?? "").split(separator: " ").map(String.init)
                let body = [UInt8](Data(base64Encoded: event.fields["body_b64"] as? String ?? "") ?? Data())
                if head.first == "ident", let ident = file.ident {
                    // The recorded ident named the recording server's file; this server allocated its own.
                    head[2] = String(ident)
                    head[3] = String(file.salt)
                }
                try socket.send(head.joined(separator: " "), body: body)
                if dropAfterUpload && head.first == "upload" { return }
            case ("s2c", "message"):
                guard let socket else { throw RealmTestError("a message before the upgrade") }
                let recorded = try ServerMessage(parsing: event.messageBytes)
                let got = try socket.nextMessage()
                #expect(got.type == recorded.type, "expected \(recorded.type), got \(got)")
                switch (got, recorded) {
                case (.ident(let ident), _):
                    #expect(ident.fileIdent > 0 && ident.fileIdentSalt > 0)
                    file.ident = ident.fileIdent
                    file.salt = ident.fileIdentSalt
                case (.download(let download), .download(let want)):
                    // The client discards its changesets when the cursor's client version reaches them.
                    #expect(download.downloadClientVersion == want.downloadClientVersion)
                    #expect(download.uploadClientVersion == want.uploadClientVersion)
                    #expect(download.downloadServerVersion >= lastServerVersion)
                    #expect(download.latestServerVersion >= download.downloadServerVersion)
                    #expect(download.body.isEmpty && (0...1).contains(download.progress))
                    lastServerVersion = download.downloadServerVersion
                default:
                    #expect(got == recorded)
                }
            default:
                throw RealmTestError("unknown event \(event.direction) \(event.kind)")
            }
        }
    }

    /// The documents of `expected.jsonl` sorted by `seq`.
    static func expected(_ scenario: String) throws -> [BSONDocument] {
        try Recordings.expectedDocuments(scenario).sorted { ($0["seq"]?.int64Value ?? 0) < ($1["seq"]?.int64Value ?? 0) }
    }

    /// Whether the sink's SQLite value is how the SQLite sink stores `value`.
    static func matches(_ stored: SQLiteValue, _ value: BSON) -> Bool {
        switch (stored, value) {
        case (.null, .null): return true
        case (.integer(let number), .int64(let want)): return number == want
        case (.integer(let number), .int32(let want)): return number == Int64(want)
        case (.integer(let number), .bool(let want)): return number == (want ? 1 : 0)
        case (.integer(let number), .datetime(let want)): return number == want
        case (.real(let number), .double(let want)): return number == want
        case (.blob(let bytes), .objectId(let want)): return bytes == want.bytes
        case (.blob(let bytes), .binary(let want)): return bytes == want.bytes
        case (.text(let text), .decimal128(let want)): return text == want.description
        case (.text(let text), .string(let want)): return text == want || text == value.extendedJSON(.relaxed)
        case (.text(let text), _):
            // Embedded objects, lists, maps, mixed: relaxed Extended JSON (keys compared sorted).
            guard let parsed = try? BSON(extendedJSON: text) else { return false }
            return Recordings.sortedKeys(parsed).extendedJSON(.relaxed) == Recordings.sortedKeys(value).extendedJSON(.relaxed)
        default: return false
        }
    }

    static func expectSinkHoldsExactly(_ scenario: String, server: RealmTestServer) throws {
        let rows = try server.sqliteReadings()
        let expected = try Self.expected(scenario)
        #expect(rows.count == expected.count, "\(scenario): \(rows.count) rows, \(expected.count) expected")
        for (row, document) in zip(rows, expected) {
            for (key, value) in document {
                #expect(
                    Self.matches(row[key] ?? .null, value),
                    "\(scenario) \(document["_id"] ?? .null).\(key): \(row[key] ?? .null) for \(value)")
            }
        }
    }

    @Test("each recorded scenario keeps the client going and the sink holds exactly expected.jsonl", arguments: ["basic", "batch"])
    func replayScenario(scenario: String) throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let file = ClientFile()
        for transcript in Recordings.transcriptFiles(scenario) {
            try Self.replay(transcript, port: { server.port }, file: file, token: try server.accessToken())
        }
        try Self.expectSinkHoldsExactly(scenario, server: server)
    }

    @Test("reconnect: changesets sent again after a lost acknowledgement are stored once")
    func reconnectStoresOnce() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let file = ClientFile()
        let transcripts = Recordings.transcriptFiles("reconnect")
        try Self.replay(transcripts[0], port: { server.port }, file: file, token: try server.accessToken(), dropAfterUpload: true)
        // The first session's write may be under way: the second one must not store anything twice either way.
        try Self.replay(transcripts[1], port: { server.port }, file: file, token: try server.accessToken())
        try Self.expectSinkHoldsExactly("reconnect", server: server)
        // And once more, as a client that lost this acknowledgement too: still nothing twice.
        try Self.replay(transcripts[1], port: { server.port }, file: file, token: try server.accessToken())
        try Self.expectSinkHoldsExactly("reconnect", server: server)
    }

    @Test("a schema changeset acknowledged on its own is learned: objects in a later session, after a restart, are stored")
    func schemaAcknowledgedAlone() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let changesets = try #require(try Recordings.uploads("basic").first).changesets()
        let token = try server.accessToken()
        func session(_ part: ArraySlice<UploadChangeset>, file: (UInt64, Int64)?) throws -> (UInt64, Int64) {
            let socket = try RealmTestSocket(port: server.port, token: token)
            let data = #"{"schemaVersion":1,"sessionReason":0}"#
            try socket.send("bind 1 \(data.utf8.count) 0 \(file == nil ? 1 : 0) 0", body: Array(data.utf8))
            var ident = file
            if ident == nil {
                guard case .ident(let given) = try socket.nextMessage() else { throw RealmTestError("no ident") }
                ident = (given.fileIdent, given.fileIdentSalt)
            }
            try socket.send("ident 1 \(ident!.0) \(ident!.1) 0 0 0 0 0 2", body: Array("{}".utf8))
            let upload = UploadMessage(
                session: 1, changesets: Array(part), progressClientVersion: part.last!.clientVersion,
                progressServerVersion: 0, lockedServerVersion: 0)
            try socket.send(ClientMessage.upload(upload).encoded())
            guard case .download(let ack) = try socket.nextMessage() else { throw RealmTestError("no acknowledgement") }
            #expect(ack.downloadClientVersion == part.last!.clientVersion)
            return ident!
        }
        let file = try session(changesets[..<1], file: nil)
        server.server.kill9()
        try server.server.restart()
        _ = try session(changesets[1...], file: file)
        try Self.expectSinkHoldsExactly("basic", server: server)
    }

    @Test("a server killed between the upload and its acknowledgement: the client's resend after the restart is stored once")
    func restartBetweenUploadAndAck() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let file = ClientFile()
        let transcripts = Recordings.transcriptFiles("reconnect")
        let token = try server.accessToken()
        try Self.replay(transcripts[0], port: { server.port }, file: file, token: token, dropAfterUpload: true)
        server.server.kill9()
        try server.server.restart()
        // The same token and client file after the restart: both were persisted.
        try Self.replay(transcripts[1], port: { server.port }, file: file, token: token)
        try Self.expectSinkHoldsExactly("reconnect", server: server)
    }
}

extension BSON {
    var int64Value: Int64? {
        switch self {
        case .int64(let value): value
        case .int32(let value): Int64(value)
        default: nil
        }
    }
}
