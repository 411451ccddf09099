import Foundation
import IngestCore
@testable import IngestServer
import IngestSupport
import IngestTestSupport
import Testing

@testable import RealmSync

/// The HTTP calls a Realm app makes before syncing, the tokens the upgrade
/// accepts, and the session's answers to what the recordings do not show
/// (bidirectional tables, rejected objects, oversized messages, pings).
@Suite("Realm sync endpoint: HTTP calls, tokens, errors", .serialized)
struct RealmEndpointCallTests {
    /// The payload of a JWT as JSON.
    static func payload(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && !parts[2].isEmpty)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[1])),
            let json = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { throw RealmTestError("not a JWT: \(token.prefix(40))") }
        return json
    }

    /// `exp` and `iat` as the Realm client reads them: JSON integers.
    static func expectIntegerTimes(_ token: String) throws {
        let claims = try payload(token)
        let text = String(decoding: Base64URL.decode(String(token.split(separator: ".")[1])) ?? [], as: UTF8.self)
        for name in ["exp", "iat"] {
            #expect(text.range(of: "\"\(name)\":[0-9]+[,}]", options: .regularExpression) != nil, "\(name) must be a JSON integer: \(text)")
        }
        #expect(((claims["exp"] as? NSNumber)?.int64Value ?? 0) > ((claims["iat"] as? NSNumber)?.int64Value ?? 0))
    }

    @Test("location, login with Realm's body, profile, refresh and logout answer in the recorded shapes")
    func httpCallsBeforeSyncing() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let location = try server.call("GET", "/api/client/v2.0/app/\(RealmTestServer.appId)/location")
        #expect(location.status == 200)
        let json = try #require(location.json)
        #expect(json["hostname"] as? String == "http://127.0.0.1:\(server.port)")
        #expect(json["ws_hostname"] as? String == "ws://127.0.0.1:\(server.port)")
        #expect(json["deployment_model"] as? String == "GLOBAL" && json["location"] is String)
        let proxied = try server.call(
            "GET", "/api/client/v2.0/app/\(RealmTestServer.appId)/location",
            headers: ["X-Forwarded-Proto": "https", "X-Forwarded-Host": "ingest.example.com"])
        #expect(proxied.json?["ws_hostname"] as? String == "wss://ingest.example.com")
        #expect(proxied.json?["hostname"] as? String == "https://ingest.example.com")
        #expect(try server.call("GET", "/api/client/v2.0/app/nope/location").status == 404)

        let login = try server.realmLogin()
        let access = try #require(login["access_token"] as? String)
        let refresh = try #require(login["refresh_token"] as? String)
        #expect(login["user_id"] is String && login["device_id"] is String)
        try Self.expectIntegerTimes(access)
        try Self.expectIntegerTimes(refresh)

        let profile = try server.call("GET", "/api/client/v2.0/auth/profile", headers: ["Authorization": "Bearer \(access)"])
        #expect(profile.status == 200, "\(profile.text)")
        let body = try #require(profile.json)
        #expect(body["user_id"] as? String == login["user_id"] as? String)
        #expect(body["data"] is [String: Any])
        let identities = try #require(body["identities"] as? [[String: Any]])
        #expect(identities.first?["provider_type"] as? String == "anon-user")
        #expect(try server.call("GET", "/api/client/v2.0/auth/profile", headers: ["Authorization": "Bearer x.y.z"]).status == 401)

        let session = try server.call("POST", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(refresh)"])
        #expect(session.status == 201)
        let renewed = try #require(session.json?["access_token"] as? String)
        try Self.expectIntegerTimes(renewed)
        #expect(try server.call("DELETE", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(refresh)"]).status == 204)
        #expect(try server.call("POST", "/api/client/v2.0/auth/session", headers: ["Authorization": "Bearer \(refresh)"]).status == 401)
    }

    /// An access token signed with `secret` for `app`, with the given times.
    static func token(app: String, secret: String, issuedAt: Int64, expiresAt: Int64) -> String {
        JWT.signHS256(
            claims: .object([
                .init("iss", .string("dataingest")), .init("sub", .string("000000000000000000000001")), .init("aud", .string(app)),
                .init("did", .string("000000000000000000000002")), .init("typ", .string("access")),
                .init("iat", .integer(issuedAt)), .init("exp", .integer(expiresAt)),
            ]), secret: Array(secret.utf8))
    }

    @Test("the upgrade refuses missing, forged, expired and cross-app tokens, unknown apps and old protocols")
    func upgradeRefusals() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let now = Int64(Date().timeIntervalSince1970)
        let app = RealmTestServer.appId
        #expect(try RealmTestSocket(port: server.port, token: nil).upgrade.status == 401)
        #expect(try RealmTestSocket(port: server.port, token: "x.y.z").upgrade.status == 401)
        let forged = Self.token(app: app, secret: "not-the-apps-secret-0123456789-0123456789", issuedAt: now, expiresAt: now + 600)
        #expect(try RealmTestSocket(port: server.port, token: forged).upgrade.status == 401)
        let expired = Self.token(app: app, secret: RealmTestServer.secret, issuedAt: now - 7200, expiresAt: now - 3600)
        let refused = try RealmTestSocket(port: server.port, token: expired).upgrade
        #expect(refused.status == 401 && refused.text.contains("expired_token"), "\(refused.text)")
        // A token of the other app of this server, presented to this app: 403.
        let otherToken = try server.accessToken(app: "other-app")
        let crossApp = try RealmTestSocket(port: server.port, token: otherToken).upgrade
        #expect(crossApp.status == 403 && crossApp.text.contains("wrong_app"), "\(crossApp.text)")
        #expect(try RealmTestSocket(port: server.port, app: "nope", token: otherToken).upgrade.status == 404)
        let old = try RealmTestSocket(
            port: server.port, token: try server.accessToken(),
            protocols: "com.mongodb.realm-query-sync#13, com.mongodb.realm-query-sync#12"
        ).upgrade
        #expect(old.status == 400 && old.text.contains("unsupported_sync_protocol"))
        // A valid token chooses the highest version offered that the server speaks.
        let good = try RealmTestSocket(
            port: server.port, token: try server.accessToken(),
            protocols: "com.mongodb.realm-query-sync#15, com.mongodb.realm-query-sync#14"
        ).upgrade
        #expect(good.status == 101 && good.header("Sec-WebSocket-Protocol") == "com.mongodb.realm-query-sync#14")
    }

    /// Opens a bound, identified session 1 and returns the socket.
    static func identifiedSession(_ server: RealmTestServer) throws -> RealmTestSocket {
        let socket = try RealmTestSocket(port: server.port, token: try server.accessToken())
        #expect(socket.upgrade.status == 101)
        let data = #"{"schemaVersion":1,"sessionReason":0}"#
        try socket.send("bind 1 \(data.utf8.count) 0 1 0", body: Array(data.utf8))
        guard case .ident(let ident) = try socket.nextMessage() else { throw RealmTestError("no ident") }
        try socket.send("ident 1 \(ident.fileIdent) \(ident.fileIdentSalt) 0 0 0 0 0 2", body: Array("{}".utf8))
        try socket.send("mark 1 1")
        #expect(try socket.nextMessage() == .mark(MarkMessage(session: 1, requestIdent: 1)))
        return socket
    }

    static func upload(_ socket: RealmTestSocket, clientVersion: UInt64, _ instructions: [Instruction]) throws {
        let data = ChangesetEncoder.encode(instructions)
        let message = UploadMessage(
            session: 1,
            changesets: [
                UploadChangeset(
                    clientVersion: clientVersion, lastIntegratedServerVersion: 0, originTimestamp: 1000, originFileIdent: 0, data: data)
            ],
            progressClientVersion: clientVersion, progressServerVersion: 0, lockedServerVersion: 0)
        try socket.send(ClientMessage.upload(message).encoded())
    }

    @Test("pings are answered, a bidirectional table gets the asymmetric-only error, an oversized message closes with 1009")
    func sessionErrors() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let socket = try Self.identifiedSession(server)
        try socket.send("ping 123 4")
        #expect(try socket.nextMessage() == .pong(timestamp: 123))
        try Self.upload(
            socket, clientVersion: 2,
            [
                .addTable(AddTable(table: "Chat", type: .topLevel, primaryKey: .init(field: "_id", type: .objectId, isNullable: false))),
                .createObject(table: "Chat", object: .objectId(ObjectId.generate())),
            ])
        guard case .jsonError(let error) = try socket.nextMessage() else { throw RealmTestError("no json_error") }
        let body = try error.body()
        #expect(error.session == 1 && body.message.contains("asymmetric"), "\(body.message)")
        #expect(!body.tryAgain)

        let big = try RealmTestSocket(port: server.port, token: try server.accessToken())
        // The frame header announces 17 MiB: refused before the payload is read.
        var frame: [UInt8] = [0x82, 0xFF]
        for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8(truncatingIfNeeded: UInt64(17 << 20) >> UInt64(shift))) }
        try big.socket.send(frame + [1, 2, 3, 4])
        guard case .close(let code, _) = try big.next() else { throw RealmTestError("no close frame") }
        #expect(code == .messageTooBig)
    }

    @Test("queries, unbind, a message for an unbound session, and a token that expired while connected")
    func sessionProtocol() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        let socket = try Self.identifiedSession(server)
        // An empty subscription set: completed by an empty download of that query version.
        try socket.send("query 1 1 2", body: Array("{}".utf8))
        guard case .download(let complete) = try socket.nextMessage() else { throw RealmTestError("no download") }
        #expect(complete.queryVersion == 1 && complete.batchState == .lastInBatch && complete.body.isEmpty)
        // Subscriptions: this server holds nothing to download.
        let query = #"{"Chat":"(TRUEPREDICATE)"}"#
        try socket.send("query 1 2 \(query.utf8.count)", body: Array(query.utf8))
        guard case .queryError(let refused) = try socket.nextMessage() else { throw RealmTestError("no query_error") }
        #expect(refused.code == .badQuery && refused.queryVersion == 2 && refused.message.contains("asymmetric data only"))
        try socket.send("unbind 1")
        #expect(try socket.nextMessage() == .unbound(session: 1))
        // A message for a session that is not bound: a connection error (session 0), then the close frame.
        try socket.send("mark 1 2")
        guard case .jsonError(let error) = try socket.nextMessage() else { throw RealmTestError("no json_error") }
        #expect(error.code == .badSessionIdent && error.session == 0)
        #expect(try error.body().action == .protocolViolation)
        guard case .close = try socket.next() else { throw RealmTestError("no close frame") }

        // Within the upgrade's clock-skew leeway, but expired: the session asks the client to refresh.
        let now = Int64(Date().timeIntervalSince1970)
        let late = try RealmTestSocket(
            port: server.port,
            token: Self.token(
                app: RealmTestServer.appId, secret: RealmTestServer.secret, issuedAt: now - 600, expiresAt: now - 5))
        #expect(late.upgrade.status == 101)
        let data = #"{"schemaVersion":1,"sessionReason":0}"#
        try late.send("bind 1 \(data.utf8.count) 0 1 0", body: Array(data.utf8))
        guard case .jsonError(let expired) = try late.nextMessage() else { throw RealmTestError("no json_error") }
        #expect(expired.code == .tokenExpired && expired.session == 1)
        let body = try expired.body()
        #expect(body.action == .refreshUser && body.tryAgain)
    }

    @Test("an object the schema rejects gets Realm's compensating-write error naming it, and is counted, not stored")
    func compensatingWrite() throws {
        let server = try RealmTestServer()
        defer { server.stop() }
        // Teach the development schema SensorReading from the recording (basic), then send a reading without its required fields.
        let file = RealmEndpointTests.ClientFile()
        try RealmEndpointTests.replay(
            Recordings.transcriptFiles("basic")[0], port: { server.port }, file: file,
            token: try server.accessToken())
        let socket = try Self.identifiedSession(server)
        let id = ObjectId.generate()
        try Self.upload(
            socket, clientVersion: 2,
            [
                .addTable(
                    AddTable(
                        table: "SensorReading", type: .asymmetric,
                        primaryKey: .init(field: "_id", type: .objectId, isNullable: false))),
                .addColumn(AddColumn(table: "SensorReading", field: "deviceId", type: .string, isNullable: false)),
                .createObject(table: "SensorReading", object: .objectId(id)),
            ])
        var messages: [ServerMessage] = []
        for _ in 0..<2 { messages.append(try socket.nextMessage()) }
        guard case .jsonError(let error) = messages.first else { throw RealmTestError("no json_error: \(messages)") }
        #expect(error.code == .compensatingWrite)
        let body = try error.body()
        #expect(body.action == .warning)
        #expect(body.rejectedUpdates?.first?.table == "SensorReading")
        #expect(body.rejectedUpdates?.first?.primaryKey == .objectId(id))
        #expect(body.rejectedClientVersion == 2)
        guard case .download(let ack) = messages.last else { throw RealmTestError("no acknowledgement: \(messages)") }
        #expect(ack.downloadClientVersion == 2)
        #expect(body.compensatingWriteServerVersion == ack.downloadServerVersion)
        #expect(try server.sqliteReadings().count == 5)
        let metrics = try server.call("GET", "/metrics").text
        #expect(
            metrics.contains(#"ingest_objects_total{app="myapp-abcde",outcome="rejected"} 1"#),
            "\(metrics.split(separator: "\n").filter { $0.contains("rejected") })")
    }
}
