#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestServer
import IngestSupport

// `ingest-forward` (Samples/LogForwarder, the release binary built next to
// this one) forwarding with `--once` into a real `ingest-server` on
// 127.0.0.1, each case timed from the forwarder's start until it exits,
// which it does once every line is acknowledged by the server; then the rows
// are counted in the sink. The cases (INGEST_BENCH_FORWARD_CASES, a comma
// list, default all):
//
//   plain      one file of INGEST_BENCH_FORWARD_LINES lines (default
//              1,000,000), development server, SQLite at synchronous=FULL.
//              Baselines in the same run: reading the file line by line into
//              Strings (what any forwarder must at least do), and inserting
//              the same lines directly into a SQLite table of the sink's
//              ForwardedLine shape with a prepared statement in transactions
//              of 1,000 (the forwarder's default batch), synchronous=FULL.
//   files      the same number of lines in INGEST_BENCH_FORWARD_FILES files
//              (default 1,000) matched by one glob; against the same baseline.
//   multiline  about as many lines as Java-style events (a timestamped line
//              and 0 to 4 continuation lines: an exception and `at` frames)
//              joined by `--multiline-start`; every event one row.
//   rsyslog    INGEST_BENCH_FORWARD_PG_LINES lines (default 200,000) into
//              PostgreSQL (INGEST_BENCH_POSTGRES_URL or INGEST_TEST_POSTGRES_URL):
//              `ingest-forward` → `ingest-server` (PostgreSQL sink), and, when
//              `rsyslogd` with its imfile and ompgsql modules is installed,
//              rsyslog run as its own process (imfile → ompgsql), once with
//              its defaults and once set up for throughput: the action on a
//              queue of 8 worker threads, each with its own connection,
//              inserting batches of up to 1,000 lines in one transaction
//              (with 16 workers the fastest set-up measured, Benchmarks/README.md);
//              each checked for exactly that many rows. Skipped, and said
//              so, without them. With the PostgreSQL server's PID
//              (INGEST_BENCH_POSTGRES_PID or INGEST_TEST_POSTGRES_PID) also
//              the CPU time per line of every process of each path:
//              ingest-forward, ingest-server and PostgreSQL; rsyslog and
//              PostgreSQL.

func forwardBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let lineCount = max(1_000, Int(environment["INGEST_BENCH_FORWARD_LINES"] ?? "") ?? 1_000_000)
    let fileCount = max(1, Int(environment["INGEST_BENCH_FORWARD_FILES"] ?? "") ?? 1_000)
    let postgresLines = max(1_000, Int(environment["INGEST_BENCH_FORWARD_PG_LINES"] ?? "") ?? 200_000)
    let timeoutSeconds = Double(environment["INGEST_BENCH_FORWARD_TIMEOUT"] ?? "") ?? 1_200
    let cases = Set(
        (environment["INGEST_BENCH_FORWARD_CASES"] ?? "plain,files,multiline,rsyslog").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        })

    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let forwardPath = exe.deletingLastPathComponent().appendingPathComponent("ingest-forward").path
    guard FileManager.default.isExecutableFile(atPath: forwardPath) else {
        throw ServerBenchError("\(forwardPath) is missing; build it: swift build -c release --product ingest-forward")
    }

    let directory = NSTemporaryDirectory() + "ingest-bench-forward-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let forwarder = ForwardRunner(executable: forwardPath, directory: directory, timeoutSeconds: timeoutSeconds)

    // The input, written before anything is timed: lines of 80-90 bytes.
    let logPath = directory + "/app.log"
    try writeLines(to: logPath, 0..<lineCount)

    // Baseline 1: the file read line by line into Strings.
    let readRate = try readLinesPerSecond(logPath, expected: lineCount)

    // Baseline 2: the same lines inserted directly into a ForwardedLine-shaped table.
    let sqliteRate = try directForwardedLineInserts(
        logPath, expected: lineCount, batch: 1_000,
        database: directory + "/baseline.sqlite")
    let baselineName = "direct SQLite inserts of the lines, ForwardedLine shape, txn of 1,000, synchronous=FULL"

    var figures: [Figure] = []
    if cases.contains("plain") {
        let server = try ServerBenchProcess(directory: subdirectory(directory, "plain"))
        defer { server.stop() }
        let seconds = try forwarder.run(server: server, name: "plain", arguments: [logPath])
        try expectRows(server, lines: lineCount, rows: lineCount, sources: 1)
        let rate = Double(lineCount) / seconds
        figures += [
            Figure(
                group: "forward", name: "ingest-forward --once, \(lineCount)-line file into ingest-server, until all in its SQLite",
                value: rate, unit: "lines/s", baseline: (baselineName, sqliteRate), target: .ratioAtLeast(0.8)),
            Figure(
                group: "forward", name: "  same run", value: rate, unit: "lines/s",
                baseline: ("reading the file line by line into Strings", readRate), target: nil),
        ]
    }

    if cases.contains("files") {
        // The same lines spread over `fileCount` files, one glob.
        let manyDirectory = directory + "/many"
        try FileManager.default.createDirectory(atPath: manyDirectory, withIntermediateDirectories: true)
        let perFile = lineCount / fileCount
        let total = perFile * fileCount
        for file in 0..<fileCount {
            try writeLines(to: manyDirectory + "/app-\(file).log", file * perFile..<(file + 1) * perFile)
        }
        let server = try ServerBenchProcess(directory: subdirectory(directory, "files"))
        defer { server.stop() }
        let seconds = try forwarder.run(server: server, name: "files", arguments: [manyDirectory + "/*.log"])
        try expectRows(server, lines: total, rows: total, sources: fileCount)
        figures.append(
            Figure(
                group: "forward",
                name: "ingest-forward --once, \(fileCount) files × \(perFile) lines (one glob) into ingest-server",
                value: Double(total) / seconds, unit: "lines/s", baseline: (baselineName, sqliteRate), target: nil))
    }

    if cases.contains("multiline") {
        let path = directory + "/java.log"
        let (lines, events) = try writeJavaEvents(to: path, lines: lineCount)
        let server = try ServerBenchProcess(directory: subdirectory(directory, "multiline"))
        defer { server.stop() }
        let seconds = try forwarder.run(
            server: server, name: "multiline", arguments: ["--multiline-start", #"^\d{4}-\d{2}-\d{2}T"#, path])
        try expectRows(server, lines: lines, rows: events, sources: 1)
        figures += [
            Figure(
                group: "forward",
                name: "ingest-forward --once --multiline-start, \(lines) lines as \(events) Java-style events into ingest-server",
                value: Double(lines) / seconds, unit: "lines/s", baseline: (baselineName, sqliteRate), target: nil),
            Figure(
                group: "forward", name: "  the same, events (one row each)", value: Double(events) / seconds, unit: "events/s",
                baseline: nil, target: nil),
        ]
    }

    if cases.contains("rsyslog") {
        figures += try postgresForwardFigures(
            environment: environment, lines: postgresLines, directory: directory + "/postgres", forwarder: forwarder)
    }
    return figures
}

/// `directory/name`, created.
private func subdirectory(_ directory: String, _ name: String) throws -> String {
    let path = directory + "/" + name
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs `ingest-forward --once` against a server and waits for it to exit.
private struct ForwardRunner {
    var executable: String
    var directory: String
    var timeoutSeconds: Double

    /// Seconds from the start until it exited with 0 (every line acknowledged).
    func run(server: ServerBenchProcess, name: String, arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            [
                "--app-id", server.appId, "--base-url", "http://127.0.0.1:\(server.port)",
                "--data-dir", directory + "/forward-\(name)", "--once", "--upload-timeout", "\(Int(timeoutSeconds))",
            ] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let outputPath = directory + "/forward-\(name).out"
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
            throw ServerBenchError(
                "ingest-forward did not finish within \(Int(timeoutSeconds)) s (pid \(process.processIdentifier) killed)")
        }
        process.waitUntilExit()
        let seconds = Double(nowNanoseconds() - start) / 1e9
        guard process.terminationStatus == 0 else {
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw ServerBenchError("ingest-forward exited with \(process.terminationStatus): \(output)")
        }
        return seconds
    }
}

/// Lines `range` of the bench's plain log (80-90 bytes each).
private func writeLines(to path: String, _ range: Range<Int>) throws {
    guard let file = fopen(path, "w") else { throw ServerBenchError("cannot create \(path)") }
    defer { fclose(file) }
    for i in range {
        fputs(
            "2026-11-29T16:\(10 + i / 60_000 % 50):\(10 + i / 1_000 % 50).\(100 + i % 900)Z INFO api request \(i) handled in \(i % 97) ms status=200\n",
            file)
    }
}

/// At least `lines` lines of events: a timestamped line followed by 0 to 4
/// continuation lines (an exception, then `at` frames). (lines, events).
private func writeJavaEvents(to path: String, lines: Int) throws -> (Int, Int) {
    guard let file = fopen(path, "w") else { throw ServerBenchError("cannot create \(path)") }
    defer { fclose(file) }
    var written = 0
    var events = 0
    while written < lines {
        let i = events
        let continuation = i % 5
        fputs(
            "2026-11-29T16:\(10 + i / 60_000 % 50):\(10 + i / 1_000 % 50).\(100 + i % 900)Z \(continuation == 0 ? "INFO" : "ERROR") request \(i) \(continuation == 0 ? "handled" : "failed")\n",
            file)
        if continuation > 0 {
            fputs("java.lang.IllegalStateException: order \(i) has no lines\n", file)
            for frame in 1..<continuation {
                fputs("\tat com.example.shop.OrderService.check(OrderService.java:\(100 + frame))\n", file)
            }
        }
        written += 1 + continuation
        events += 1
    }
    return (written, events)
}

/// The server's SQLite holds `rows` ForwardedLine rows, each once (by
/// source and offset), from `sources` files, whose messages hold
/// `lines - rows` joined line breaks in all.
private func expectRows(_ server: ServerBenchProcess, lines: Int, rows: Int, sources: Int) throws {
    let stored = server.query("SELECT count(*) FROM ForwardedLine").first ?? -1
    let distinct = server.query("SELECT count(*) FROM (SELECT DISTINCT source, \"offset\" FROM ForwardedLine)").first ?? -1
    let files = server.query("SELECT count(DISTINCT source) FROM ForwardedLine").first ?? -1
    let breaks =
        server.query("SELECT sum(length(message) - length(replace(message, char(10), ''))) FROM ForwardedLine").first ?? -1
    guard stored == Int64(rows), distinct == Int64(rows), files == Int64(sources), breaks == Int64(lines - rows) else {
        throw ServerBenchError(
            "the server's SQLite holds \(stored) ForwardedLine rows (\(distinct) distinct positions, \(files) files, \(breaks) joined lines) of \(rows) (\(sources) files, \(lines - rows) joined lines)"
        )
    }
}

// MARK: - PostgreSQL: ingest-forward and rsyslog

private func postgresForwardFigures(
    environment: [String: String], lines: Int, directory: String, forwarder: ForwardRunner
) throws -> [Figure] {
    guard let url = environment["INGEST_BENCH_POSTGRES_URL"] ?? environment["INGEST_TEST_POSTGRES_URL"] else {
        FileHandle.standardError.write(
            Data(
                ("ingest-bench: skipped the forwarder's PostgreSQL and rsyslog figures: INGEST_BENCH_POSTGRES_URL (or INGEST_TEST_POSTGRES_URL) "
                    + "is not set; start one with `Scripts/services/postgres.sh start DIR` and `source DIR/postgres.env`\n").utf8))
        return []
    }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let logPath = directory + "/app.log"
    try writeLines(to: logPath, 0..<lines)
    let database = "ingest_bench_forward_\(getpid())"
    let admin = try PostgresConnection(url)
    defer { admin.close() }
    _ = try admin.execute("DROP DATABASE IF EXISTS \(database)")
    _ = try admin.execute("CREATE DATABASE \(database)")
    defer { _ = try? admin.execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
    let databaseURL = replacingDatabase(in: url, with: database)
    let db = try PostgresConnection(databaseURL)
    defer { db.close() }
    /// The integer a one-value query returns; -1 when it fails or is not one.
    func integer(_ sql: String) -> Int {
        Int((try? db.queryText(sql).first?.first ?? nil) ?? "") ?? -1
    }
    func count(_ table: String) -> Int { integer("SELECT count(*) FROM \"\(table)\"") }
    func largestId(_ table: String) -> Int { integer("SELECT coalesce(max(id), 0) FROM \"\(table)\"") }

    // The PostgreSQL server's CPU (the postmaster and its backends), when its PID is given.
    let postgresPID = databasePID("POSTGRES_PID", in: environment)
    func postgresCPU() -> Double { databaseCPUSeconds(postgresPID) }

    // ingest-forward → ingest-server (PostgreSQL sink) → PostgreSQL.
    let config = try forwardPostgresConfig(directory: directory, connection: databaseURL)
    let server = try ServerBenchProcess(directory: directory, config: config)
    defer { server.stop() }
    // The forwarder is this process's only child that exits (and is waited for) during its run.
    let before = (forwarder: exitedChildrenCPUSeconds(), server: server.cpuSeconds(), postgres: postgresCPU())
    let seconds = try forwarder.run(server: server, name: "postgres", arguments: [logPath])
    let forwardCPU = (
        forwarder: exitedChildrenCPUSeconds() - before.forwarder, server: server.cpuSeconds() - before.server,
        postgres: postgresCPU() - before.postgres
    )
    let stored = count("ForwardedLine")
    let distinct = integer(#"SELECT count(DISTINCT "offset") FROM "ForwardedLine""#)
    guard stored == lines, distinct == lines else {
        throw ServerBenchError("PostgreSQL holds \(stored) ForwardedLine rows (\(distinct) distinct offsets) of \(lines)")
    }
    let forwardRate = Double(lines) / seconds
    let forwardName = "ingest-forward --once, \(lines)-line file into ingest-server's PostgreSQL sink"

    guard let rsyslogd = ["/usr/sbin/rsyslogd", "/usr/bin/rsyslogd"].first(where: FileManager.default.isExecutableFile(atPath:)),
        let modules = rsyslogModuleDirectory()
    else {
        FileHandle.standardError.write(
            Data(
                "ingest-bench: skipped the rsyslog peer: rsyslogd with its imfile and ompgsql modules is not installed (apt-get install rsyslog rsyslog-pgsql)\n"
                    .utf8))
        return [Figure(group: "forward", name: forwardName, value: forwardRate, unit: "lines/s", baseline: nil, target: nil)]
    }
    var figures: [Figure] = []
    var rsyslogCPU: [(variant: String, seconds: Double)] = []
    for (variant, batched) in [("defaults", false), ("8 queue workers inserting batches of up to 1,000 lines", true)] {
        let table = batched ? "rsyslog_batched" : "rsyslog_defaults"
        _ = try db.execute("CREATE TABLE \(table) (id bigserial PRIMARY KEY, host text, received timestamptz, message text)")
        let postgresBefore = postgresCPU()
        let run = try RsyslogRun(
            rsyslogd: rsyslogd, modules: modules, directory: directory + "/\(table)", logPath: logPath,
            connection: databaseURL, table: table, batched: batched)
        defer { run.stop() }
        let deadline = run.start + UInt64(1_200 * 1e9)
        var rows = 0
        // The largest id is one index lookup; rows are counted (a scan) only
        // once it reaches the line count, so that polling costs PostgreSQL little.
        while nowNanoseconds() < deadline && run.isRunning {
            if largestId(table) >= lines {
                rows = count(table)
                if rows >= lines { break }
            }
            usleep(20_000)
        }
        let rsyslogSeconds = Double(nowNanoseconds() - run.start) / 1e9
        if postgresPID != nil {
            let own = processCPUSeconds(pid: run.process.processIdentifier) ?? 0
            rsyslogCPU.append((variant, own + postgresCPU() - postgresBefore))
        }
        usleep(500_000)  // anything beyond the lines would show now
        rows = count(table)
        guard rows == lines else {
            FileHandle.standardError.write(
                Data("ingest-bench: rsyslog (\(variant)) left \(rows) of \(lines) rows in PostgreSQL; no figure\n".utf8))
            continue
        }
        figures.append(
            Figure(
                group: "forward", name: figures.isEmpty ? forwardName : "  same run", value: forwardRate, unit: "lines/s",
                baseline: ("rsyslog \(variant), imfile → ompgsql, same file and PostgreSQL", Double(lines) / rsyslogSeconds),
                target: .ratioAtLeast(batched ? 1.5 : 10)))
    }
    if figures.isEmpty {
        figures.append(Figure(group: "forward", name: forwardName, value: forwardRate, unit: "lines/s", baseline: nil, target: nil))
    }
    if postgresPID != nil {
        let perLine = 1e6 / Double(lines)
        let total = (forwardCPU.forwarder + forwardCPU.server + forwardCPU.postgres) * perLine
        let name = "CPU time per line of ingest-forward, ingest-server and PostgreSQL together"
        for (index, peer) in rsyslogCPU.enumerated() {
            figures.append(
                Figure(
                    group: "forward", name: index == 0 ? name : "  same run", value: total, unit: "µs",
                    baseline: ("of rsyslog (\(peer.variant)) and PostgreSQL together", peer.seconds * perLine), target: nil))
        }
        if rsyslogCPU.isEmpty { figures.append(Figure(group: "forward", name: name, value: total, unit: "µs", baseline: nil, target: nil)) }
        for (part, seconds) in [
            ("ingest-forward", forwardCPU.forwarder), ("ingest-server", forwardCPU.server), ("PostgreSQL", forwardCPU.postgres),
        ] {
            figures.append(
                Figure(group: "forward", name: "  of which \(part)", value: seconds * perLine, unit: "µs", baseline: nil, target: nil))
        }
    }
    return figures
}

/// The directory holding rsyslog's imfile and ompgsql modules, if both are installed.
private func rsyslogModuleDirectory() -> String? {
    let candidates = ["/usr/lib/x86_64-linux-gnu/rsyslog", "/usr/lib/aarch64-linux-gnu/rsyslog", "/usr/lib/rsyslog", "/usr/lib64/rsyslog"]
    return candidates.first { directory in
        FileManager.default.fileExists(atPath: directory + "/imfile.so")
            && FileManager.default.fileExists(atPath: directory + "/ompgsql.so")
    }
}

/// An ingest-server configuration with one app, `bench`, whose sink is the
/// PostgreSQL database at `connection` and whose schema is ForwardedLine's.
private func forwardPostgresConfig(directory: String, connection: String) throws -> (path: String, appId: String) {
    let text = """
        {
          "stateDirectory": "\(directory)/server",
          "apps": [
            {
              "id": "bench",
              "auth": { "anon-user": {} },
              "sink": { "kind": "postgres", "connection": "\(connection)" },
              "schema": {
                "ForwardedLine": {
                  "kind": "asymmetric",
                  "properties": {
                    "_id": "string", "source": "string", "offset": "int", "host": "string", "receivedAt": "date",
                    "format": "string", "message": "string", "timestamp": "date?", "level": "string?", "fields": "mixed?"
                  }
                }
              }
            }
          ]
        }
        """
    let path = directory + "/ingest.json"
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return (path, "bench")
}

/// `rsyslogd -n -f CONF -i PIDFILE` with its own work directory: imfile
/// reads `logPath` from its start, ompgsql inserts each line into `table`
/// (`option.stdsql` quoting). `batched`: the action gets a queue of its own
/// with 8 worker threads (one PostgreSQL connection each) that dequeue
/// batches of up to 1,000 lines, each batch one transaction (ompgsql sends
/// `BEGIN`, one `INSERT` per line, `COMMIT`), and retries a failed batch
/// every second, forever. Stopped by PID.
private final class RsyslogRun {
    let process = Process()
    let start: UInt64

    init(rsyslogd: String, modules: String, directory: String, logPath: String, connection: String, table: String, batched: Bool)
        throws
    {
        let work = directory + "/work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        // ompgsql wraps each batch its queue hands it in BEGIN … COMMIT, one
        // INSERT (one round trip) per line: parallel workers, not larger
        // transactions, are what make it faster (Benchmarks/README.md).
        let queue =
            batched
            ? #" queue.type="LinkedList" queue.size="200000" queue.dequeueBatchSize="1000" queue.workerThreads="8" queue.workerThreadMinimumMessages="1000" action.resumeRetryCount="-1" action.resumeInterval="1""#
            : ""
        let conf = """
            global(workDirectory="\(work)")
            module(load="\(modules)/imfile.so" mode="inotify")
            module(load="\(modules)/ompgsql.so")
            template(name="line" type="string" option.stdsql="on"
                string="INSERT INTO \(table) (host, received, message) VALUES ('%hostname%', '%timegenerated:::date-pgsql%', '%msg%')")
            ruleset(name="pg") {
                action(type="ompgsql" conninfo="\(connection)" template="line"\(queue))
            }
            input(type="imfile" file="\(logPath)" tag="app" ruleset="pg" freshStartTail="off")
            """
        let confPath = directory + "/rsyslog.conf"
        try Data(conf.utf8).write(to: URL(fileURLWithPath: confPath))
        process.executableURL = URL(fileURLWithPath: rsyslogd)
        process.arguments = ["-n", "-f", confPath, "-i", directory + "/rsyslogd.pid"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let outputPath = directory + "/rsyslogd.out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: outputPath)
        start = nowNanoseconds()
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// SIGTERM, then SIGKILL if it has not exited after 15 s.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = nowNanoseconds() + 15_000_000_000
        while process.isRunning && nowNanoseconds() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
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
