#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport
import IngestTestSupport
import RealmSync

struct RealmTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A real `ingest-server` process with the recorded app `myapp-abcde`
/// (development mode, anonymous login, a known signing secret) and a
/// second app `other-app`; the sink is SQLite in the state directory, or
/// PostgreSQL at `postgres`.
final class RealmTestServer {
    static let appId = "myapp-abcde"
    static let secret = "realm-test-signing-secret-0123456789-abcdef"
    static let otherSecret = "realm-test-other-secret-0123456789-abcdefgh"

    let directory: TemporaryDirectory
    let server: IngestServerProcess
    let dataPath: String
    var port: UInt16 { server.port }

    /// - Parameter sharedState: also keep the server's state (users,
    ///   tokens, client files) in that PostgreSQL database, as several servers do.
    /// - Parameter limits: the configuration's `limits` object, as JSON.
    init(postgres: String? = nil, sharedState: Bool = false, limits: String? = nil) throws {
        directory = try TemporaryDirectory("realm")
        dataPath = directory.path + "/data"
        let sink = postgres.map { #", "sink": { "kind": "postgres", "connection": "\#($0)" }"# } ?? ""
        let state = sharedState ? postgres.map { #""sharedState": { "kind": "postgres", "connection": "\#($0)" },"# } ?? "" : ""
        let config = """
            {
              "stateDirectory": "\(dataPath)", \(state) \(limits.map { #""limits": \#($0),"# } ?? "")
              "apps": [
                { "id": "\(Self.appId)", "developmentMode": true, "signingSecret": "\(Self.secret)",
                  "auth": { "anon-user": {}, "local-userpass": {} }\(sink) },
                { "id": "other-app", "developmentMode": true, "signingSecret": "\(Self.otherSecret)", "auth": { "anon-user": {} } }
              ]
            }
            """
        let path = directory.path + "/ingest.json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        server = try IngestServerProcess(in: directory.path, arguments: ["--data-dir", dataPath, "--config", path])
    }

    func stop() { server.kill9() }

    var sinkPath: String { dataPath + "/\(Self.appId).sqlite" }

    /// One HTTP request on a fresh connection.
    func call(_ method: String, _ path: String, headers: [String: String] = [:], body: String = "") throws -> LoopbackResponse {
        try LoopbackConnection.request(port: port, method, path, headers: headers, body: Array(body.utf8))
    }

    /// Logs in as a Realm SDK does (the recorded body); returns the answer's JSON.
    func realmLogin(app: String = RealmTestServer.appId) throws -> [String: Any] {
        let body =
            #"{"provider":"anon-user","options":{"device":{"appId":"\#(app)","platform":"Linux","platformVersion":"1","sdk":"experiment","sdkVersion":"1","cpuArch":"x86_64","deviceName":"","deviceVersion":"","frameworkName":"","frameworkVersion":"","coreVersion":"14.14.0","bundleId":""}}}"#
        let answer = try call(
            "POST", "/api/client/v2.0/app/\(app)/auth/providers/anon-user/login",
            headers: ["Content-Type": "application/json;charset=utf-8", "Accept": "application/json"], body: body)
        guard answer.status == 200, let json = answer.json else { throw RealmTestError("login: \(answer.status) \(answer.text)") }
        return json
    }

    func accessToken(app: String = RealmTestServer.appId) throws -> String {
        guard let token = try realmLogin(app: app)["access_token"] as? String else { throw RealmTestError("no access_token") }
        return token
    }

    /// The rows of the `SensorReading` table, each column by name, ordered by `seq`.
    func sqliteReadings() throws -> [[String: SQLiteValue]] {
        let db = try SQLiteConnection(path: sinkPath, options: .init(access: .readOnly))
        let info = try db.makeStatement(sql: #"PRAGMA table_info("SensorReading")"#)
        var names: [String] = []
        while try info.step() { names.append(info.text(at: 1)) }
        let statement = try db.makeStatement(sql: #"SELECT * FROM "SensorReading" ORDER BY "seq""#)
        var rows: [[String: SQLiteValue]] = []
        while try statement.step() {
            var row: [String: SQLiteValue] = [:]
            for column in 0..<statement.columnCount { row[names[Int(column)]] = statement.value(at: column) }
            rows.append(row)
        }
        return rows
    }
}

/// A Realm client's WebSocket as the recordings show it: the upgrade with
/// the recorded headers and a real token, then masked binary frames.
final class RealmTestSocket {
    let socket: LoopbackConnection
    private var reader = WebSocketMessageReader(configuration: .init(requireMasking: false))
    /// The upgrade's answer.
    private(set) var upgrade: LoopbackResponse

    /// Opens the WebSocket; `upgrade.status` is 101 on success (anything
    /// else: the server refused, the connection is done).
    init(
        port: UInt16, app: String = RealmTestServer.appId, token: String?,
        protocols: String = (2...14).reversed().map { "com.mongodb.realm-query-sync#\($0)" }.joined(separator: ", ")
    ) throws {
        socket = try LoopbackConnection(port: port)
        let query = token.map { "?baas_at=\($0)" } ?? ""
        let head =
            "GET /api/client/v2.0/app/\(app)/realm-sync\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: a4onaWwr6ZiatOphr73Qww==\r\nSec-WebSocket-Protocol: \(protocols)\r\n"
            + "Sec-WebSocket-Version: 13\r\nUpgrade: websocket\r\nUser-Agent: RealmSync/14.14.0 (test replay)\r\n\r\n"
        try socket.send(Array(head.utf8))
        // A 101 leaves the bytes after its head (the first frames) in the
        // connection, for ``next(timeout:)``; a refusal has its body.
        upgrade = try socket.readResponse(timeout: 20)
    }

    /// Sends one message as a masked binary frame.
    func send(_ message: [UInt8]) throws {
        try socket.send(WebSocketFrameEncoder.frame(.binary, payload: message, maskingKey: (0x12, 0x34, 0x56, 0x78)))
    }

    func send(_ text: String, body: [UInt8] = []) throws { try send(Array((text + "\n").utf8) + body) }

    /// The next event (a message, or a close frame) within `timeout` seconds.
    func next(timeout: Double = 20) throws -> WebSocketMessageReader.Event {
        let deadline = monotonicNow() + timeout
        while true {
            if let event = try reader.next() { return event }
            let remaining = deadline - monotonicNow()
            guard remaining > 0 else { throw RealmTestError("no WebSocket message within \(timeout) s") }
            let bytes = try socket.receive(timeout: remaining)
            guard !bytes.isEmpty else { throw RealmTestError("the server closed the connection without a close frame") }
            reader.append(bytes)
        }
    }

    /// The next server message (failing on a close frame or a text message).
    func nextMessage(timeout: Double = 20) throws -> ServerMessage {
        switch try next(timeout: timeout) {
        case .binary(let bytes): return try ServerMessage(parsing: bytes)
        case let other: throw RealmTestError("expected a binary message, got \(other)")
        }
    }
}
