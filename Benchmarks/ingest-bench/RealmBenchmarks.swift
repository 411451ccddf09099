#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport
import RealmSync

// The Realm sync endpoint next to the native upload path, in the same run,
// on the same objects: the recorded Realm client's changesets
// (../shared/testdata/realm-sync/batch: the schema changeset, then
// transactions of 100 SensorReading objects with every property kind),
// their ObjectIds rewritten so that every object is new, re-sent by a load
// client over WebSockets (4 connections, each its own client file; uploads
// of 5 changesets, zlib-compressed, as realm-core packs them), until the
// last changeset is acknowledged. The baseline: the same documents (built
// from those changesets) in sealed segments of one 100-object transaction
// each, uploaded over keep-alive HTTP by 4 clients to a second fresh server.
// Both servers: release ingest-server, development mode, SQLite sink.
//
// Sizes: INGEST_BENCH_REALM_OBJECTS (default 100,000), rounded to whole
// transactions of 100. REALM_SYNC_TESTDATA_DIR: where the recordings are
// (default ../shared/testdata/realm-sync, from the working directory).

func realmBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let requested = max(100, Int(environment["INGEST_BENCH_REALM_OBJECTS"] ?? "") ?? 100_000)
    let clients = 4
    let load = try RealmBenchLoad(transactions: requested / 100, clients: clients)
    let objectCount = load.objectCount

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-realm-\(getpid())").path
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    // 1. Native: sealed segments of the same documents.
    try FileManager.default.createDirectory(atPath: directory + "/native", withIntermediateDirectories: true)
    let native = try ServerBenchProcess(directory: directory + "/native")
    let nativeToken = try native.loginAnonymously()
    let nativeCPUBefore = native.cpuSeconds()
    let nativeSeconds = try uploadAll(load.segments, clients: clients, server: native, token: nativeToken, expectPerSegment: 100)
    let nativeCPU = (native.cpuSeconds() - nativeCPUBefore) / Double(objectCount)
    let nativeStored = native.count("SensorReading")
    native.stop()
    guard nativeStored == Int64(objectCount) else {
        throw ServerBenchError("the native server's SQLite holds \(nativeStored) of \(objectCount) objects")
    }

    // 2. Realm: the changesets over the sync endpoint.
    try FileManager.default.createDirectory(atPath: directory + "/realm", withIntermediateDirectories: true)
    let realm = try ServerBenchProcess(directory: directory + "/realm")
    defer { realm.stop() }
    let realmToken = try realm.loginAnonymously()
    let realmCPUBefore = realm.cpuSeconds()
    let realmSeconds = try load.send(port: realm.port, appId: realm.appId, token: realmToken)
    let realmCPU = (realm.cpuSeconds() - realmCPUBefore) / Double(objectCount)
    let realmStored = realm.count("SensorReading")
    guard realmStored == Int64(objectCount) else {
        throw ServerBenchError("the Realm endpoint's SQLite holds \(realmStored) of \(objectCount) objects")
    }

    return [
        Figure(
            group: "realm",
            name:
                "Realm sync endpoint: \(objectCount) recorded SensorReading objects in changesets of 100, \(clients) WebSockets, until acknowledged",
            value: Double(objectCount) / realmSeconds, unit: "objects/s",
            baseline: (
                "the same documents as sealed segments of 100, \(clients) keep-alive HTTP clients", Double(objectCount) / nativeSeconds
            ),
            target: .ratioAtLeast(0.5)),
        Figure(
            group: "realm", name: "server CPU time per object (user + system), Realm sync endpoint",
            value: realmCPU * 1e6, unit: "µs",
            baseline: ("server CPU per object, native segment upload", nativeCPU * 1e6), target: nil),
    ]
}

struct RealmBenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The load: per connection, its upload messages (prepared before anything
/// is timed), and the same documents as sealed segments for the baseline.
struct RealmBenchLoad {
    /// Per connection: the upload messages in order, and the last client version.
    var connections: [(messages: [[UInt8]], lastVersion: UInt64)] = []
    /// The baseline's sealed segments, one 100-object transaction each.
    var segments: [[UInt8]] = []
    var objectCount = 0

    static func recordings() -> URL {
        if let path = ProcessInfo.processInfo.environment["REALM_SYNC_TESTDATA_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: "../shared/testdata/realm-sync")
    }

    /// The recorded batch scenario's changesets: the schema one, then those with objects.
    static func recordedChangesets() throws -> (schema: [Instruction], transactions: [[Instruction]]) {
        let url = recordings().appendingPathComponent("batch/transcript.jsonl")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw RealmBenchError("cannot read \(url.path); set REALM_SYNC_TESTDATA_DIR")
        }
        var all: [[Instruction]] = []
        for line in text.split(separator: "\n") {
            guard let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["dir"] as? String == "c2s", let head = event["head"] as? String, head.hasPrefix("upload ")
            else { continue }
            let body = Data(base64Encoded: event["body_b64"] as? String ?? "") ?? Data()
            guard case .upload(let upload) = try ClientMessage(parsing: Array((head + "\n").utf8) + [UInt8](body)) else { continue }
            for changeset in try upload.changesets() { all.append(try ChangesetDecoder.decodeAll(changeset.data)) }
        }
        let hasObjects = { (instructions: [Instruction]) in
            instructions.contains { if case .createObject = $0 { true } else { false } }
        }
        guard let schema = all.first(where: { !hasObjects($0) }) else { throw RealmBenchError("no schema changeset in the recording") }
        let transactions = all.filter(hasObjects)
        guard !transactions.isEmpty else { throw RealmBenchError("no object changesets in the recording") }
        return (schema, transactions)
    }

    init(transactions count: Int, clients: Int) throws {
        let (schema, templates) = try Self.recordedChangesets()
        var ingestor = ChangesetIngestor(schema: try Schema([]), schemaMode: .development)
        _ = try ingestor.ingest(instructions: schema)
        var counter: UInt32 = 0
        let seed = ObjectId.generate().bytes
        func freshId() -> ObjectId {
            counter += 1
            var bytes = Array(seed[0..<8])
            withUnsafeBytes(of: counter.bigEndian) { bytes += $0 }
            return ObjectId(bytes: bytes)
        }
        let storeId = SegmentStoreID.random()
        // The segments declare the schema the changesets declare (a mixed
        // property cannot be inferred from its values).
        let schemaDocument = ingestor.schema.bsonDocument.bsonBytes()
        let created = Int64(Date().timeIntervalSince1970 * 1000)
        var perConnection = [[UploadChangeset]](repeating: [], count: clients)
        for connection in 0..<clients {
            perConnection[connection].append(
                UploadChangeset(
                    clientVersion: 2, lastIntegratedServerVersion: 0, originTimestamp: 1000, originFileIdent: 0,
                    data: ChangesetEncoder.encode(schema)))
        }
        for index in 0..<max(1, count) {
            let instructions = Self.rewritingIds(templates[index % templates.count], freshId)
            let objects = try ingestor.ingest(instructions: instructions).objects
            objectCount += objects.count
            // The baseline's segment: the same documents, one transaction.
            var body: [UInt8] = []
            let writer = try SegmentWriter(
                header: SegmentHeader(
                    storeId: storeId, segmentNumber: UInt64(index + 1), createdAtMillis: created,
                    schema: schemaDocument)
            ) { body.append(contentsOf: $0) }
            for object in objects { try writer.append(collection: object.className, document: object.document.bsonBytes()) }
            try writer.commit(transactionNumber: UInt64(index + 1))
            try writer.finish()
            segments.append(body)
            let connection = index % clients
            let version = UInt64(perConnection[connection].count + 2)
            perConnection[connection].append(
                UploadChangeset(
                    clientVersion: version, lastIntegratedServerVersion: 0, originTimestamp: 1000, originFileIdent: 0,
                    data: ChangesetEncoder.encode(instructions)))
        }
        for changesets in perConnection {
            var messages: [[UInt8]] = []
            var start = 0
            while start < changesets.count {
                let group = Array(changesets[start..<min(changesets.count, start + 5)])
                let message = UploadMessage(
                    session: 1, changesets: group, progressClientVersion: group.last!.clientVersion,
                    progressServerVersion: 0, lockedServerVersion: 0)
                messages.append(ClientMessage.upload(message).encoded())
                start += 5
            }
            connections.append((messages, changesets.last!.clientVersion))
        }
    }

    /// `instructions` with every ObjectId primary key replaced by a fresh one
    /// (the same fresh one for every mention of the same old key).
    static func rewritingIds(_ instructions: [Instruction], _ fresh: () -> ObjectId) -> [Instruction] {
        var mapping: [ObjectId: ObjectId] = [:]
        func key(_ key: PrimaryKey) -> PrimaryKey {
            guard case .objectId(let old) = key else { return key }
            if let new = mapping[old] { return .objectId(new) }
            let new = fresh()
            mapping[old] = new
            return .objectId(new)
        }
        func path(_ path: ObjectPath) -> ObjectPath {
            var path = path
            path.object = key(path.object)
            return path
        }
        return instructions.map { instruction in
            switch instruction {
            case .createObject(let table, let object): return .createObject(table: table, object: key(object))
            case .eraseObject(let table, let object): return .eraseObject(table: table, object: key(object))
            case .update(var update):
                update.path = path(update.path)
                return .update(update)
            case .addInteger(let target, let value): return .addInteger(path(target), value: value)
            case .arrayInsert(let target, let value, let size): return .arrayInsert(path(target), value: value, priorSize: size)
            case .arrayMove(let target, let index, let size): return .arrayMove(path(target), newIndex: index, priorSize: size)
            case .arrayErase(let target, let size): return .arrayErase(path(target), priorSize: size)
            case .clear(let target, let collection): return .clear(path(target), collection: collection)
            case .setInsert(let target, let value): return .setInsert(path(target), value: value)
            case .setErase(let target, let value): return .setErase(path(target), value: value)
            default: return instruction
            }
        }
    }

    /// Sends every connection's uploads (one thread each, pipelined as the
    /// Realm client does) and returns the seconds until each connection's
    /// last changeset is acknowledged.
    func send(port: Int, appId: String, token: String) throws -> Double {
        let failure = LockedBox<String?>(nil)
        let finished = LockedBox(0)
        let start = nowNanoseconds()
        for connection in connections {
            let thread = Thread {
                defer { finished.withLock { $0 += 1 } }
                do {
                    try RealmBenchConnection(port: port, appId: appId, token: token)
                        .upload(connection.messages, lastVersion: connection.lastVersion)
                } catch {
                    failure.withLock { if $0 == nil { $0 = "\(error)" } }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        let deadline = start + 600_000_000_000
        while finished.withLock({ $0 }) < connections.count {
            guard nowNanoseconds() < deadline else { throw RealmBenchError("the Realm uploads did not finish within 600 s") }
            usleep(1_000)
        }
        if let failure = failure.withLock({ $0 }) { throw RealmBenchError("Realm upload failed: \(failure)") }
        return Double(nowNanoseconds() - start) / 1e9
    }
}

/// One Realm client connection of the load: the upgrade, bind, ident,
/// mark, then the uploads as masked binary frames, read until acknowledged.
final class RealmBenchConnection {
    private let fd: Int32
    private var reader = WebSocketMessageReader(configuration: .init(requireMasking: false))

    init(port: Int, appId: String, token: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RealmBenchError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw RealmBenchError("connect to 127.0.0.1:\(port): errno \(errno)")
        }
        let head =
            "GET /api/client/v2.0/app/\(appId)/realm-sync?baas_at=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
            + "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Key: a4onaWwr6ZiatOphr73Qww==\r\nSec-WebSocket-Protocol: com.mongodb.realm-query-sync#14\r\n\r\n"
        try send(Array(head.utf8))
        var received: [UInt8] = []
        while true {
            received += try receive()
            if let end = (0..<max(0, received.count - 3)).first(where: {
                received[$0] == 13 && received[$0 + 1] == 10 && received[$0 + 2] == 13 && received[$0 + 3] == 10
            }) {
                guard String(decoding: received[..<end], as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
                    throw RealmBenchError("upgrade refused: \(String(decoding: received, as: UTF8.self).prefix(300))")
                }
                reader.append(Array(received[(end + 4)...]))
                break
            }
        }
    }

    deinit { close(fd) }

    func upload(_ messages: [[UInt8]], lastVersion: UInt64) throws {
        let data = #"{"schemaVersion":1,"sessionReason":0}"#
        try sendMessage(Array("bind 1 \(data.utf8.count) 0 1 0\n\(data)".utf8))
        guard case .ident(let ident) = try nextMessage() else { throw RealmBenchError("no ident after bind") }
        try sendMessage(Array("ident 1 \(ident.fileIdent) \(ident.fileIdentSalt) 0 0 0 0 0 2\n{}".utf8))
        try sendMessage(Array("mark 1 1\n".utf8))
        guard case .mark = try nextMessage() else { throw RealmBenchError("no mark echo") }
        for message in messages { try sendMessage(message) }
        while true {
            switch try nextMessage() {
            case .download(let download):
                if download.downloadClientVersion >= lastVersion { return }
            case let other:
                throw RealmBenchError("unexpected \(other.type): \(String(decoding: other.encoded().prefix(300), as: UTF8.self))")
            }
        }
    }

    private func sendMessage(_ message: [UInt8]) throws {
        try send(WebSocketFrameEncoder.frame(.binary, payload: message, maskingKey: (1, 2, 3, 4)))
    }

    private func nextMessage() throws -> ServerMessage {
        while true {
            if let event = try reader.next() {
                guard case .binary(let bytes) = event else { throw RealmBenchError("unexpected WebSocket event \(event)") }
                return try ServerMessage(parsing: bytes)
            }
            reader.append(try receive())
        }
    }

    private func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw RealmBenchError("send: errno \(errno)") }
            sent += n
        }
    }

    private func receive() throws -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw RealmBenchError(n == 0 ? "the server closed the connection" : "recv: errno \(errno)") }
            return Array(chunk[..<n])
        }
    }
}
