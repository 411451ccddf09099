#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport
@testable import IngestServer
import IngestTestSupport

/// A real `ingest-server` process on 127.0.0.1 and an ephemeral port, started
/// from a config file (or as the development server), killed by PID on release.
final class IngestTestServer {
    let server: IngestServerProcess
    let directory: TemporaryDirectory
    var port: UInt16 { server.port }
    /// The state directory (SQLite sinks live here).
    let dataPath: String

    /// A 40-byte signing secret shared with the tests, so they can mint
    /// expired tokens with the app's own key.
    static let shopSecret = "test-signing-secret-0123456789-abcdefghij"

    /// Starts the server with `config` (JSON text; `$DATA` is replaced by the
    /// state directory), or as the development server when `config` is nil;
    /// with `environment`, in that environment instead of the test's.
    init(
        config: String?, extraArguments: [String] = [], directory: TemporaryDirectory? = nil,
        environment: [String: String]? = nil
    ) throws {
        let directory = try directory ?? TemporaryDirectory("e2e")
        self.directory = directory
        dataPath = directory.path + "/data"
        var arguments = ["--data-dir", dataPath]
        if let config {
            let path = directory.path + "/ingest.json"
            try Data(config.replacingOccurrences(of: "$DATA", with: dataPath).utf8).write(to: URL(fileURLWithPath: path))
            arguments += ["--config", path]
        }
        server = try IngestServerProcess(
            in: directory.path, arguments: arguments + extraArguments, logName: "stderr.log",
            environment: environment)
    }

    /// Kills the process by PID (idempotent).
    func stop() { server.kill9() }

    /// One request on a fresh connection (`Connection: close`; the response
    /// ends at EOF), bounded by `timeout` seconds.
    func call(
        _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = [],
        timeout: Double = 20
    ) throws -> LoopbackResponse {
        try Self.call(port: port, method, path, headers: headers, body: body, timeout: timeout)
    }

    /// ``call(_:_:headers:body:timeout:)`` for any thread: needs only the port.
    static func call(
        port: UInt16, _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = [],
        timeout: Double = 20
    ) throws -> LoopbackResponse {
        try LoopbackConnection.request(port: port, method, path, headers: headers, body: body, timeout: timeout)
    }

    /// Logs in anonymously; returns the access and refresh tokens.
    func login(app: String) throws -> (access: String, refresh: String) {
        let response = try call("POST", "/api/client/v2.0/app/\(app)/auth/providers/anon-user/login", body: Array("{}".utf8))
        guard response.status == 200, let json = response.json,
            let access = json["access_token"] as? String, let refresh = json["refresh_token"] as? String
        else { throw TestSupportError("login failed: \(response.status) \(response.text)") }
        return (access, refresh)
    }

    /// Uploads a segment body with a bearer token.
    func upload(app: String, token: String?, body: [UInt8]) throws -> LoopbackResponse {
        var headers = ["Content-Type": "application/gzip"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try call("POST", "/api/client/v2.0/app/\(app)/ingest", headers: headers, body: body)
    }

    /// The SQLite sink file of `app`.
    func sinkPath(_ app: String) -> String { dataPath + "/\(app).sqlite" }
}

/// Builds a sealed segment (gzip) with SegmentWriter: one entry per transaction.
func makeSegment(
    store: SegmentStoreID, number: UInt64, firstTransaction: UInt64 = 1,
    schema: Schema? = nil, createdAtMillis: Int64 = 1_700_000_000_000,
    _ transactions: [[(String, BSONDocument)]]
) throws -> [UInt8] {
    final class Collect { var bytes: [UInt8] = [] }
    let out = Collect()
    let header = SegmentHeader(
        storeId: store, segmentNumber: number, createdAtMillis: createdAtMillis,
        schema: schema.map { $0.bsonDocument.bsonBytes() } ?? SegmentFormat.emptyDocument)
    let writer = try SegmentWriter(header: header) { out.bytes.append(contentsOf: $0) }
    for (offset, transaction) in transactions.enumerated() {
        for (collection, document) in transaction {
            try writer.append(collection: collection, document: document.bsonBytes())
        }
        try writer.commit(transactionNumber: firstTransaction + UInt64(offset))
    }
    try writer.finish()
    return out.bytes
}

/// Runs a query on an SQLite file; each row's columns rendered as text
/// (`hex:` + hex for blobs, `nil` for NULL, SQLite's own text for numbers).
func sqliteRows(_ path: String, _ sql: String) throws -> [[String]] {
    let db = try SQLiteConnection(path: path, options: .init(access: .readOnly))
    let statement = try db.makeStatement(sql: sql)
    var rows: [[String]] = []
    while try statement.step() {
        rows.append(
            (0..<statement.columnCount).map { column in
                switch statement.columnType(at: column) {
                case .null: "nil"
                case .blob: "hex:" + statement.blob(at: column).map { String(format: "%02x", $0) }.joined()
                default: statement.text(at: column)
                }
            })
    }
    return rows
}

/// The configuration most upload tests use: app `shop` (fixed signing
/// secret, a WeatherSensor collection with an embedded Reading list) and app
/// `other`; small inflation limits so that bombs are cheap to build.
let uploadTestConfig = """
    {
      "stateDirectory": "$DATA",
      "limits": { "maxInflatedBytes": 4194304, "maxInflateRatio": 50 },
      "apps": [
        {
          "id": "shop",
          "signingSecret": "\(IngestTestServer.shopSecret)",
          "auth": { "anon-user": {}, "local-userpass": {}, "api-key": {} },
          "schema": {
            "WeatherSensor": {
              "kind": "asymmetric",
              "properties": {
                "_id": "objectId", "deviceId": "string", "temperature": "double",
                "active": "bool?", "takenAt": "date?", "price": "decimal128?", "count": "int?",
                "readings": "Reading[]"
              }
            },
            "Reading": { "kind": "embedded", "properties": { "value": "double", "note": "string?" } }
          }
        },
        {
          "id": "other",
          "auth": { "anon-user": {} },
          "schema": { "Log": { "kind": "asymmetric", "properties": { "_id": "objectId", "message": "string" } } }
        }
      ]
    }
    """

/// A valid WeatherSensor document.
func sensor(_ id: ObjectId = ObjectId.generate(), device: String = "station-1", temperature: Double = 21.5) -> BSONDocument {
    [
        "_id": .objectId(id), "deviceId": .string(device), "temperature": .double(temperature),
        "readings": .array([.document(["value": .double(1.5)]), .document(["value": .double(2.5), "note": .string("ok")])]),
    ]
}

/// Holds the write lock of an SQLite database (an open `BEGIN IMMEDIATE`)
/// from the test process until released.
final class SQLiteLocker {
    private var db: SQLiteConnection?

    init(path: String) throws {
        let db = try SQLiteConnection(path: path, options: .init(access: .readWrite))
        try db.begin(.immediate)
        self.db = db
    }

    deinit { release() }

    /// Rolls back and closes (idempotent).
    func release() {
        db?.rollback()
        db?.close()
        db = nil
    }
}

/// Segment 1 of `store`: two plain sensors (`ids[0]`, `ids[1]`) in one
/// transaction, then `ids[2]` with every scalar column type (bool, datetime,
/// Decimal128, int32, a negative double, `fullDevice` as its text) in a second.
func typedSensorSegment(store: SegmentStoreID, ids: [ObjectId], fullDevice: String) throws -> [UInt8] {
    var full = sensor(ids[2], device: fullDevice, temperature: -3.25)
    full["active"] = .bool(true)
    full["takenAt"] = .datetime(1_700_000_123_456)
    full["price"] = .decimal128(try Decimal128(parsing: "12.50"))
    full["count"] = .int32(7)
    return try makeSegment(
        store: store, number: 1,
        [
            [("WeatherSensor", sensor(ids[0])), ("WeatherSensor", sensor(ids[1]))],
            [("WeatherSensor", full)],
        ])
}
