#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestSupport

// The ingest server in its own process (the release `ingest-server` built
// next to this binary, development mode, SQLite sink at its default
// synchronous=FULL) receiving prepared sealed segments over keep-alive
// HTTP/1.1 from several client threads, next to inserting the same objects
// directly into a SQLite table of the sink's shape with a prepared statement
// in transactions of 1,000 (one per segment, as the server commits), in the
// same run. Then 16 clients ingest continuously while the server's peak
// resident memory (VmHWM) is read.
//
// The two take turns, as in the sinks group: the segments in rounds
// (INGEST_BENCH_SERVER_ROUNDS, default 6), the baseline first in every other
// round, so that both meet the machine's load of the same moments and tables
// of the same size; each rate is its rows over the sum of its rounds' times.
// (Run once each, one after the other, the ratio moved between 0.62× and
// 0.87× from run to run on the idle machine.)
//
// Sizes: INGEST_BENCH_SERVER_SEGMENTS (default 600 segments of 1,000
// objects for the rate), INGEST_BENCH_SERVER_CLIENTS (default 4),
// INGEST_BENCH_SERVER_MEMORY_SEGMENTS (default 480, spread over 16 clients).

func serverBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let segmentCount = max(1, Int(environment["INGEST_BENCH_SERVER_SEGMENTS"] ?? "") ?? 600)
    let clients = max(1, Int(environment["INGEST_BENCH_SERVER_CLIENTS"] ?? "") ?? 4)
    let rounds = min(segmentCount, max(1, Int(environment["INGEST_BENCH_SERVER_ROUNDS"] ?? "") ?? 6))
    let memorySegments = max(16, Int(environment["INGEST_BENCH_SERVER_MEMORY_SEGMENTS"] ?? "") ?? 480)
    let perSegment = 1_000

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-bench-server-\(getpid())").path
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    // Prepared before anything is timed: sealed segments and the same objects as values.
    let sensor = WeatherSensorBSON()
    let rateSegments = try ServerBenchSegments(sensor: sensor, segments: segmentCount, perSegment: perSegment)
    let memorySet = try ServerBenchSegments(sensor: sensor, segments: memorySegments, perSegment: perSegment)

    let server = try ServerBenchProcess(directory: directory)
    defer { server.stop() }
    let token = try server.loginAnonymously()

    // 1. Objects/s until every segment is acknowledged and the server's CPU
    // time for it (less sensitive than wall time to other load on the
    // machine), in turns with the same objects straight into SQLite.
    let baseline = try SinkShapedInserter(path: directory + "/baseline.sqlite")
    defer { baseline.close() }
    var baselineCPU = 0.0
    let rates = try alternating(rateSegments, clients: clients, rounds: rounds, server: server, token: token) { part in
        let cpuBefore = processCPUSeconds()
        let objects = rateSegments.objects[(part.lowerBound * perSegment)..<(part.upperBound * perSegment)]
        try baseline.insert(objects, batch: perSegment)
        baselineCPU += processCPUSeconds() - cpuBefore
    }
    let stored = server.count("WeatherSensor")
    guard stored == Int64(segmentCount * perSegment) else {
        throw ServerBenchError("the server's SQLite holds \(stored) of \(segmentCount * perSegment) objects")
    }

    // 2. 16 clients ingest continuously; the server's peak resident memory.
    let memorySeconds = try uploadAll(memorySet.bodies, clients: 16, server: server, token: token, expectPerSegment: perSegment)
    let peakKiB = server.peakResidentKiB()
    guard peakKiB > 0 else { throw ServerBenchError("could not read VmHWM of the server (pid \(server.pid))") }

    return [
        Figure(
            group: "server",
            name:
                "upload \(segmentCount) sealed segments × 1,000 WeatherSensor, \(clients) keep-alive clients, until acknowledged, \(rounds) rounds in turns",
            value: rates.server, unit: "objects/s",
            baseline: ("direct SQLite inserts, sink's table, txn of 1,000, synchronous=FULL", rates.baseline),
            target: .ratioAtLeast(0.85)),
        Figure(
            group: "server", name: "server CPU time per object (user + system) during that upload",
            value: rates.serverCPUPerObject * 1e6, unit: "µs",
            baseline: ("CPU per object of the direct SQLite inserts", baselineCPU / Double(segmentCount * perSegment) * 1e6),
            target: nil),
        Figure(
            group: "server", name: "upload from 16 clients (\(memorySegments) segments)",
            value: Double(memorySegments * perSegment) / memorySeconds, unit: "objects/s", baseline: nil, target: nil),
        Figure(
            group: "server", name: "server peak resident memory (VmHWM) after 16 clients ingesting",
            value: Double(peakKiB) / 1024, unit: "MiB", baseline: nil, target: .atMost(256)),
    ]
}

/// What ``alternating(_:clients:rounds:server:token:database:baseline:)`` measured.
struct TurnRates {
    /// Objects/s through the server and in the baseline (rows over the sum of each one's rounds).
    var server: Double
    var baseline: Double
    /// The server's CPU seconds per object.
    var serverCPUPerObject: Double
    /// This process's CPU seconds per object: the upload clients, and the baseline's own work.
    var benchCPUPerObject: (server: Double, baseline: Double)
    /// The database's CPU seconds per object in each path (nil: no database process given).
    var databaseCPUPerObject: (server: Double, baseline: Double)?
}

/// Uploads `segments` through `server` and loads them with `baseline` in
/// turns: the segments in `rounds` consecutive parts, each part uploaded
/// through the server and given to `baseline` (as the part's segment
/// indices), the baseline first in odd rounds. Measures each path's rate
/// and the CPU time spent in it by the server, this process and, when
/// `database` is the PID of a database server on this machine, that
/// process and its children. Used by the server and sinks groups.
func alternating(
    _ segments: ServerBenchSegments, clients: Int, rounds: Int, server: ServerBenchProcess, token: String? = nil,
    database: Int32? = nil, baseline: (Range<Int>) throws -> Void
) throws -> TurnRates {
    let token = try token ?? server.loginAnonymously()
    let perSegment = segments.objects.count / segments.bodies.count
    var seconds = (server: 0.0, baseline: 0.0)
    var serverCPU = 0.0
    var benchCPU = (server: 0.0, baseline: 0.0)
    var databaseCPU = (server: 0.0, baseline: 0.0)
    func databaseSeconds() -> Double { databaseCPUSeconds(database) }
    for round in 0..<rounds {
        let part = (segments.bodies.count * round / rounds)..<(segments.bodies.count * (round + 1) / rounds)
        func throughServer() throws {
            let before = (server: server.cpuSeconds(), bench: processCPUSeconds(), database: databaseSeconds())
            seconds.server += try uploadAll(
                Array(segments.bodies[part]), clients: clients, server: server, token: token, expectPerSegment: perSegment)
            serverCPU += server.cpuSeconds() - before.server
            benchCPU.server += processCPUSeconds() - before.bench
            databaseCPU.server += databaseSeconds() - before.database
        }
        func direct() throws {
            let before = (bench: processCPUSeconds(), database: databaseSeconds())
            let start = nowNanoseconds()
            try baseline(part)
            seconds.baseline += Double(nowNanoseconds() - start) / 1e9
            benchCPU.baseline += processCPUSeconds() - before.bench
            databaseCPU.baseline += databaseSeconds() - before.database
        }
        if round % 2 == 0 {
            try throughServer()
            try direct()
        } else {
            try direct()
            try throughServer()
        }
    }
    let objects = Double(segments.objects.count)
    return TurnRates(
        server: objects / seconds.server, baseline: objects / seconds.baseline, serverCPUPerObject: serverCPU / objects,
        benchCPUPerObject: (benchCPU.server / objects, benchCPU.baseline / objects),
        databaseCPUPerObject: database == nil ? nil : (databaseCPU.server / objects, databaseCPU.baseline / objects))
}

struct ServerBenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A database for a direct-insert baseline, set up as the server's SQLite sink
/// is (WAL, synchronous=FULL), with `schema` created, in SQLite's default
/// page size unless `pageSize` is given. The caller closes it.
func openBaselineDatabase(_ path: String, creating schema: String, pageSize: Int? = nil) throws -> SQLiteConnection {
    let db = try SQLiteConnection(path: path)
    let pages = pageSize.map { ["PRAGMA page_size=\($0)"] } ?? []
    for sql in pages + ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", schema] { try db.execute(sql: sql) }
    return db
}

// MARK: - Segments

/// Sealed segments (one store id per set, segment numbers 1…N, one
/// 1,000-object transaction each) and the objects they hold, as values.
/// Also used by the sinks group (SinkBenchmarks.swift).
struct ServerBenchSegments {
    struct Object {
        var id: [UInt8]
        var deviceId: String
        var temperature: Double
        var pressure: Double
        var wind: Int64
    }

    var bodies: [[UInt8]] = []
    var objects: [Object] = []

    init(sensor: WeatherSensorBSON, segments: Int, perSegment: Int) throws {
        let storeId = SegmentStoreID.random()
        let created = Int64(Date().timeIntervalSince1970 * 1000)
        objects.reserveCapacity(segments * perSegment)
        for number in 1...segments {
            var body: [UInt8] = []
            let writer = try SegmentWriter(
                header: SegmentHeader(storeId: storeId, segmentNumber: UInt64(number), createdAtMillis: created)
            ) { body.append(contentsOf: $0) }
            for _ in 0..<perSegment {
                sensor.next()
                try writer.append(collection: "WeatherSensor", document: sensor.bytes)
                let document = try BSONDocument(bson: sensor.bytes)
                guard case .objectId(let id)? = document["_id"], case .string(let device)? = document["deviceId"],
                    case .double(let temperature)? = document["temperatureInFahrenheit"],
                    case .double(let pressure)? = document["barometricPressureInHg"],
                    case .int64(let wind)? = document["windSpeedInMph"]
                else {
                    throw ServerBenchError("unexpected WeatherSensor document")
                }
                objects.append(Object(id: id.bytes, deviceId: device, temperature: temperature, pressure: pressure, wind: wind))
            }
            try writer.commit(transactionNumber: UInt64(number))
            try writer.finish()
            bodies.append(body)
        }
    }
}

// MARK: - Baseline

/// Prepared inserts into a table shaped like the sink's (WITHOUT ROWID,
/// 12-byte blob `_id` primary key, `_ingested_at`, the four properties; WAL;
/// synchronous=FULL as the sink's default), `batch` rows per
/// `BEGIN IMMEDIATE … COMMIT`. The table keeps what each call inserted.
final class SinkShapedInserter {
    private let db: SQLiteConnection
    private let insertStatement: SQLiteStatement
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement

    init(path: String, pageSize: Int? = nil) throws {
        db = try openBaselineDatabase(
            path,
            creating: """
                CREATE TABLE "WeatherSensor" ("_id" BLOB NOT NULL PRIMARY KEY, "_ingested_at" INTEGER NOT NULL,
                  "deviceId" TEXT, "temperatureInFahrenheit" REAL, "barometricPressureInHg" REAL, "windSpeedInMph" INTEGER) WITHOUT ROWID
                """, pageSize: pageSize)
        insertStatement = try db.cachedStatement(
            sql: """
                INSERT INTO "WeatherSensor" ("_id", "_ingested_at", "deviceId", "temperatureInFahrenheit", "barometricPressureInHg", "windSpeedInMph")
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT("_id") DO NOTHING
                """)
        begin = try db.cachedStatement(sql: "BEGIN IMMEDIATE")
        commit = try db.cachedStatement(sql: "COMMIT")
    }

    func close() { db.close() }

    /// Inserts `objects` in transactions of `batch`.
    func insert(_ objects: ArraySlice<ServerBenchSegments.Object>, batch: Int) throws {
        var position = objects.startIndex
        while position < objects.endIndex {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            _ = try begin.step()
            begin.reset()
            for object in objects[position..<min(objects.endIndex, position + batch)] {
                try object.id.withUnsafeBytes { raw in try insertStatement.bind(blob: raw, at: 1) }
                try insertStatement.bind(now, at: 2)
                try insertStatement.bind(object.deviceId, at: 3)
                try insertStatement.bind(object.temperature, at: 4)
                try insertStatement.bind(object.pressure, at: 5)
                try insertStatement.bind(object.wind, at: 6)
                _ = try insertStatement.step()
                insertStatement.reset()
            }
            _ = try commit.step()
            commit.reset()
            position += batch
        }
    }
}

/// Objects/s of ``SinkShapedInserter`` inserting `objects` into a new
/// database at `path`, `batch` rows per transaction.
func directSinkShapedInserts(_ objects: [ServerBenchSegments.Object], batch: Int, path: String) throws -> Double {
    let inserter = try SinkShapedInserter(path: path)
    defer { inserter.close() }
    let start = nowNanoseconds()
    try inserter.insert(objects[...], batch: batch)
    return Double(objects.count) / (Double(nowNanoseconds() - start) / 1e9)
}

// MARK: - Uploading

/// The shared state of one upload run: the next segment to send and the
/// first failure. `@unchecked Sendable`: every mutable field is behind `lock`.
private final class UploadRun: @unchecked Sendable {
    let bodies: [[UInt8]]
    private let lock = Lock()
    private var next = 0
    private var failure: String?
    private var finished = 0

    init(bodies: [[UInt8]]) { self.bodies = bodies }

    func take() -> Int? {
        lock.withLock {
            guard failure == nil, next < bodies.count else { return nil }
            next += 1
            return next - 1
        }
    }

    func fail(_ message: String) { lock.withLock { if failure == nil { failure = message } } }
    func done() { lock.withLock { finished += 1 } }
    var state: (finished: Int, failure: String?) { lock.withLock { (finished, failure) } }
}

/// Uploads every body once over `clients` keep-alive connections; returns the
/// seconds until the last one is acknowledged with all objects accepted.
func uploadAll(
    _ bodies: [[UInt8]], clients: Int, server: ServerBenchProcess, token: String,
    expectPerSegment: Int
) throws -> Double {
    let run = UploadRun(bodies: bodies)
    let path = ProtocolRoutes.uploadPath(appId: server.appId)
    let port = server.port
    let start = nowNanoseconds()
    for _ in 0..<clients {
        let thread = Thread {
            defer { run.done() }
            do {
                let connection = try BenchHTTPConnection(port: port)
                while let index = run.take() {
                    // 429/503 ask to retry; bounded.
                    var attempts = 0
                    while true {
                        let (status, body) = try connection.request(
                            method: "POST", path: path, headers: ["Authorization: Bearer \(token)", "Content-Type: application/gzip"],
                            body: run.bodies[index])
                        if status == 429 || status == 503, attempts < 200 {
                            attempts += 1
                            usleep(10_000)
                            continue
                        }
                        guard status == 200 else {
                            run.fail("segment \(index + 1): HTTP \(status) \(String(decoding: body, as: UTF8.self))")
                            return
                        }
                        let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
                        guard let accepted = json?["accepted"] as? Int, accepted == expectPerSegment else {
                            run.fail("segment \(index + 1): \(String(decoding: body, as: UTF8.self))")
                            return
                        }
                        break
                    }
                }
            } catch {
                run.fail("\(error)")
            }
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    let deadline = start + 600_000_000_000
    var state = run.state
    while state.finished < clients {
        guard nowNanoseconds() < deadline else {
            throw ServerBenchError("uploads did not finish within 600 s")
        }
        usleep(1_000)
        state = run.state
    }
    let seconds = Double(nowNanoseconds() - start) / 1e9
    if let failure = state.failure { throw ServerBenchError("upload failed: \(failure)") }
    return seconds
}

/// A minimal HTTP/1.1 client on one keep-alive POSIX socket to 127.0.0.1:
/// `Content-Length` requests and responses only (what the server sends).
final class BenchHTTPConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 60) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerBenchError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw ServerBenchError("connect to 127.0.0.1:\(port): errno \(code)")
        }
    }

    deinit { close(fd) }

    /// Sends one request and reads the response: (status, body).
    func request(method: String, path: String, headers: [String], body: [UInt8]) throws -> (Int, [UInt8]) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for header in headers { head += header + "\r\n" }
        head += "\r\n"
        try send(Array(head.utf8))
        try send(body)

        // The head.
        var headEnd: Int?
        while headEnd == nil {
            headEnd = findHeadEnd()
            if headEnd == nil { try fill() }
        }
        let headText = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        let lines = headText.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw ServerBenchError("bad status line: \(lines[0])")
        }
        var length = 0
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        buffer.removeFirst(headEnd! + 4)
        while buffer.count < length { try fill() }
        let responseBody = Array(buffer[..<length])
        buffer.removeFirst(length)
        return (status, responseBody)
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ServerBenchError("send: errno \(errno)") }
            sent += n
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ServerBenchError(n == 0 ? "the server closed the connection" : "recv: errno \(errno) (timeout?)") }
            buffer += chunk[..<n]
            return
        }
    }
}

// MARK: - The server process

/// `ingest-server --port 0 --data-dir DIR` (development mode, or with
/// `--config FILE` for an app `appId` declared there) started from the
/// build directory of this binary; stopped by PID.
final class ServerBenchProcess {
    let process = Process()
    let port: Int
    let dataPath: String
    let appId: String
    var pid: Int32 { process.processIdentifier }

    init(directory: String, config: (path: String, appId: String)? = nil) throws {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let serverURL = exe.deletingLastPathComponent().appendingPathComponent("ingest-server")
        guard FileManager.default.isExecutableFile(atPath: serverURL.path) else {
            throw ServerBenchError("\(serverURL.path) is missing; build it: swift build -c release --product ingest-server")
        }
        process.executableURL = serverURL
        dataPath = directory + "/server"
        process.arguments = ["--port", "0", "--data-dir", dataPath] + (config.map { ["--config", $0.path] } ?? [])
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line: [UInt8] = []
        let fd = out.fileHandleForReading.fileDescriptor
        // INGEST_BENCH_SERVER_START_SECONDS (default 30): more for a server
        // under valgrind on a loaded machine.
        let startSeconds = Double(ProcessInfo.processInfo.environment["INGEST_BENCH_SERVER_START_SECONDS"] ?? "") ?? 30
        let deadline = nowNanoseconds() + UInt64(max(1, startSeconds) * 1e9)
        while !line.contains(10) && nowNanoseconds() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            if read(fd, &byte, 1) <= 0 { break }
            line.append(byte)
        }
        let text = String(decoding: line.prefix { $0 != 10 }, as: UTF8.self)
        guard let range = text.range(of: "127.0.0.1:"), let port = Int(text[range.upperBound...]) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ServerBenchError("ingest-server did not start (first line: \"\(text)\")")
        }
        self.port = port
        appId =
            config?.appId
            ?? ((try? String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !appId.isEmpty else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ServerBenchError("no development app id in \(dataPath)/development-app-id")
        }
    }

    /// SIGTERM, then SIGKILL if it has not exited after 15 s.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = nowNanoseconds() + 15_000_000_000
        while process.isRunning && nowNanoseconds() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    func loginAnonymously() throws -> String {
        let connection = try BenchHTTPConnection(port: port)
        let (status, body) = try connection.request(
            method: "POST", path: ProtocolRoutes.loginPath(appId: appId, provider: "anon-user"),
            headers: ["Content-Type: application/json"], body: Array("{}".utf8))
        guard status == 200, let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let token = json["access_token"] as? String
        else {
            throw ServerBenchError("anonymous login: HTTP \(status) \(String(decoding: body, as: UTF8.self))")
        }
        return token
    }

    /// The server's peak resident set (VmHWM) in KiB, 0 if unreadable.
    func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
        }
        return 0
    }

    /// The server's user + system CPU seconds so far (0 if unreadable).
    func cpuSeconds() -> Double { processCPUSeconds(pid: pid) ?? 0 }

    /// Rows of `table` in the app's SQLite database (read-only connection).
    func count(_ table: String) -> Int64 {
        guard let db = try? SQLiteConnection(path: dataPath + "/\(appId).sqlite", options: .init(access: .readOnly)),
            let statement = try? db.makeStatement(sql: "SELECT count(*) FROM \"\(table)\""),
            (try? statement.step()) == true
        else { return -1 }
        return statement.int64(at: 0)
    }
}

/// The user + system CPU seconds of process `pid` so far, from
/// /proc/PID/stat (clock-tick resolution), or nil if it cannot be read.
/// `withChildren` adds its children's: the live ones' (PostgreSQL's
/// backends) and the exited ones it has waited for.
func processCPUSeconds(pid: Int32, withChildren: Bool = false) -> Double? {
    func ticks(_ pid: String) -> (own: Double, children: Double, parent: String)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after "(comm)": state is field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]),
            let childUser = Double(fields[13]), let childSystem = Double(fields[14])
        else { return nil }
        return (user + system, childUser + childSystem, String(fields[1]))
    }
    guard let process = ticks(String(pid)) else { return nil }
    var total = process.own
    if withChildren {
        total += process.children
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries where entry.first?.isNumber == true {
            if let child = ticks(entry), child.parent == String(pid) { total += child.own }
        }
    }
    return total / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The CPU seconds of a database server's process and its children (0
/// without a PID): the PID as ``databasePID(_:in:refused:)`` gives it.
func databaseCPUSeconds(_ pid: Int32?) -> Double {
    pid.flatMap { processCPUSeconds(pid: $0, withChildren: true) } ?? 0
}

/// The PID in `INGEST_BENCH_<variable>` (or `INGEST_TEST_<variable>`, as
/// Scripts/services exports it) if it is a process on this machine; nil if
/// neither is set, or, after calling `refused` with the text, if it is not.
func databasePID(_ variable: String, in environment: [String: String], refused: (String) -> Void = { _ in }) -> Int32? {
    guard let text = environment["INGEST_BENCH_\(variable)"] ?? environment["INGEST_TEST_\(variable)"] else { return nil }
    guard let pid = Int32(text), processCPUSeconds(pid: pid) != nil else {
        refused(text)
        return nil
    }
    return pid
}

/// The user + system CPU seconds of this process's children that have
/// exited and been waited for.
func exitedChildrenCPUSeconds() -> Double { usageSeconds(RUSAGE_CHILDREN) }

/// This process's user + system CPU seconds so far (the baseline runs on one thread, alone).
func processCPUSeconds() -> Double { usageSeconds(RUSAGE_SELF) }

/// User + system seconds from `getrusage(who)`.
private func usageSeconds(_ who: __rusage_who) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(who.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}
