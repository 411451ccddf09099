#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport

// `ingest-forward` (Samples/LogForwarder, the release binary built next to
// this one) forwarding a file of INGEST_BENCH_FORWARD_LINES lines (default
// 1,000,000, plain format) with `--once` into a real `ingest-server` on
// 127.0.0.1 (development mode, SQLite sink at synchronous=FULL), timed from
// its start until it exits, which it does once every line is acknowledged
// by the server; then the lines are counted in the server's SQLite. In the
// same run: reading the file line by line into Strings (what any forwarder
// must at least do), and inserting the same lines directly into a SQLite
// table of the sink's ForwardedLine shape with a prepared statement in
// transactions of 1,000 (the forwarder's default batch), synchronous=FULL.

func forwardBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let lineCount = max(1_000, Int(environment["INGEST_BENCH_FORWARD_LINES"] ?? "") ?? 1_000_000)
    let timeoutSeconds = Double(environment["INGEST_BENCH_FORWARD_TIMEOUT"] ?? "") ?? 1_200

    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let forwardPath = exe.deletingLastPathComponent().appendingPathComponent("ingest-forward").path
    guard FileManager.default.isExecutableFile(atPath: forwardPath) else {
        throw ServerBenchError("\(forwardPath) is missing; build it: swift build -c release --product ingest-forward")
    }

    let directory = NSTemporaryDirectory() + "ingest-bench-forward-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    // The input, written before anything is timed: lines of 80-90 bytes.
    let logPath = directory + "/app.log"
    do {
        guard let file = fopen(logPath, "w") else { throw ServerBenchError("cannot create \(logPath)") }
        defer { fclose(file) }
        for i in 0..<lineCount {
            fputs(
                "2026-11-29T16:\(10 + i / 60_000 % 50):\(10 + i / 1_000 % 50).\(100 + i % 900)Z INFO api request \(i) handled in \(i % 97) ms status=200\n",
                file)
        }
    }

    // Baseline 1: the file read line by line into Strings.
    let readRate = try readLinesPerSecond(logPath, expected: lineCount)

    // Baseline 2: the same lines inserted directly into a ForwardedLine-shaped table.
    let sqliteRate = try directForwardedLineInserts(
        logPath, expected: lineCount, batch: 1_000,
        database: directory + "/baseline.sqlite")

    // The forwarder into the server.
    let server = try ServerBenchProcess(directory: directory)
    defer { server.stop() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: forwardPath)
    process.arguments = [
        "--app-id", server.appId, "--base-url", "http://127.0.0.1:\(server.port)",
        "--data-dir", directory + "/forward", "--once", "--upload-timeout", "\(Int(timeoutSeconds))", logPath,
    ]
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let outputPath = directory + "/forward.out"
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: outputPath)
    process.standardError = FileHandle(forWritingAtPath: outputPath)
    let start = nowNanoseconds()
    try process.run()
    let deadline = start + UInt64(timeoutSeconds * 1e9)
    while process.isRunning && nowNanoseconds() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw ServerBenchError("ingest-forward did not finish within \(Int(timeoutSeconds)) s (pid \(process.processIdentifier) killed)")
    }
    process.waitUntilExit()
    let seconds = Double(nowNanoseconds() - start) / 1e9
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    guard process.terminationStatus == 0 else {
        throw ServerBenchError("ingest-forward exited with \(process.terminationStatus): \(output)")
    }
    let stored = server.query("SELECT count(*) FROM ForwardedLine").first ?? -1
    let distinct = server.query("SELECT count(DISTINCT \"offset\") FROM ForwardedLine").first ?? -1
    guard stored == Int64(lineCount), distinct == Int64(lineCount) else {
        throw ServerBenchError("the server's SQLite holds \(stored) ForwardedLine rows (\(distinct) distinct offsets) of \(lineCount)")
    }
    let forwardRate = Double(lineCount) / seconds

    return [
        Figure(
            group: "forward", name: "ingest-forward --once, \(lineCount)-line file into ingest-server, until all in its SQLite",
            value: forwardRate, unit: "lines/s",
            baseline: ("direct SQLite inserts of the lines, ForwardedLine shape, txn of 1,000, synchronous=FULL", sqliteRate),
            target: nil),
        Figure(
            group: "forward", name: "  same run", value: forwardRate, unit: "lines/s",
            baseline: ("reading the file line by line into Strings", readRate), target: nil),
    ]
}

/// Lines/s of reading `path` in 64 KiB chunks and making a String of each line.
private func readLinesPerSecond(_ path: String, expected: Int) throws -> Double {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ServerBenchError("cannot open \(path)") }
    defer { close(fd) }
    let start = nowNanoseconds()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var partial: [UInt8] = []
    var lines = 0
    var bytes = 0
    while true {
        let n = read(fd, &buffer, buffer.count)
        guard n > 0 else { break }
        var lineStart = 0
        for index in 0..<n where buffer[index] == 10 {
            let text: String
            if partial.isEmpty {
                text = String(decoding: buffer[lineStart..<index], as: UTF8.self)
            } else {
                partial += buffer[lineStart..<index]
                text = String(decoding: partial, as: UTF8.self)
                partial.removeAll(keepingCapacity: true)
            }
            bytes &+= text.utf8.count
            lines += 1
            lineStart = index + 1
        }
        partial += buffer[lineStart..<n]
    }
    let seconds = Double(nowNanoseconds() - start) / 1e9
    blackHole(bytes)
    guard lines == expected else { throw ServerBenchError("read \(lines) lines of \(expected)") }
    return Double(lines) / seconds
}

/// Lines/s of inserting each line of `path` as a row of a table shaped like
/// the sink's ForwardedLine table (text `_id` primary key, WITHOUT ROWID),
/// `batch` rows per `BEGIN IMMEDIATE … COMMIT`, WAL, synchronous=FULL.
private func directForwardedLineInserts(_ path: String, expected: Int, batch: Int, database: String) throws -> Double {
    let db = try openBaselineDatabase(
        database,
        creating: """
            CREATE TABLE "ForwardedLine" ("_id" TEXT NOT NULL PRIMARY KEY, "_ingested_at" INTEGER NOT NULL,
              "source" TEXT, "offset" INTEGER, "host" TEXT, "receivedAt" INTEGER, "format" TEXT, "message" TEXT,
              "timestamp" INTEGER, "level" TEXT, "fields" TEXT) WITHOUT ROWID
            """)
    defer { db.close() }
    func exec(_ sql: String) throws { try db.execute(sql: sql) }
    let insert = try db.cachedStatement(
        sql: """
            INSERT INTO "ForwardedLine" ("_id", "_ingested_at", "source", "offset", "host", "receivedAt", "format", "message",
              "timestamp", "level", "fields") VALUES (?, ?, ?, ?, ?, ?, 'plain', ?, NULL, NULL, NULL) ON CONFLICT("_id") DO NOTHING
            """)
    guard let file = fopen(path, "r") else { throw ServerBenchError("cannot open \(path)") }
    defer { fclose(file) }
    let sourceId = "65a1f0c2e4b0a1b2c3d4e5f6"
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    let start = nowNanoseconds()
    var offset = 0
    var rows = 0
    var inTransaction = false
    while true {
        let length = getline(&line, &capacity, file)
        guard length > 0, let line else { break }
        if !inTransaction {
            try exec("BEGIN IMMEDIATE")
            inTransaction = true
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try insert.bind("\(sourceId):\(offset)", at: 1)
        try insert.bind(now, at: 2)
        try insert.bind(path, at: 3)
        try insert.bind(Int64(offset), at: 4)
        try insert.bind("bench-host", at: 5)
        try insert.bind(now, at: 6)
        // The line without its newline, borrowed from getline's buffer until the reset.
        try insert.bind(borrowedText: UnsafeRawBufferPointer(start: line, count: length - 1), at: 7)
        _ = try insert.step()
        insert.reset()
        offset += length
        rows += 1
        if rows % batch == 0 {
            try exec("COMMIT")
            inTransaction = false
        }
    }
    if inTransaction { try exec("COMMIT") }
    let seconds = Double(nowNanoseconds() - start) / 1e9
    guard rows == expected else { throw ServerBenchError("inserted \(rows) lines of \(expected)") }
    return Double(rows) / seconds
}
