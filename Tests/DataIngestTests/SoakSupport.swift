#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// The soak test's settings, from the environment.
///
/// - `INGEST_SOAK_SECONDS`: seconds of chaos (default 60: the bounded run of
///   the normal suite; 14400 for four hours).
/// - `INGEST_SOAK_SEED`: the seed of the event schedule (default random; the
///   summary prints it).
/// - `INGEST_SOAK_LOG`: a file the test appends every reported commit to
///   (default: `committed.log` in the test's temporary directory).
struct SoakSettings {
    var seconds: Double
    var seed: UInt64
    var logPath: String?
    /// Whether the app rotates refresh tokens (default yes;
    /// `INGEST_SOAK_ROTATE_REFRESH_TOKENS=0` turns it off).
    var rotateRefreshTokens = true

    /// Longer runs get longer outages and disk-full episodes.
    var isLong: Bool { seconds > 300 }
    /// Seconds between two events.
    var eventGap: ClosedRange<Double> { isLong ? 1.0...6.0 : 0.8...2.5 }
    /// Seconds a server outage lasts.
    var outage: ClosedRange<Double> { isLong ? 1.0...20.0 : 1.0...4.0 }
    /// Seconds a disk-full episode lasts.
    var diskFull: ClosedRange<Double> { isLong ? 0.5...10.0 : 0.5...3.0 }

    static func fromEnvironment() -> SoakSettings {
        let environment = ProcessInfo.processInfo.environment
        let seconds = environment["INGEST_SOAK_SECONDS"].flatMap(Double.init) ?? 60
        let seed = environment["INGEST_SOAK_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        return SoakSettings(
            seconds: max(5, seconds), seed: seed, logPath: environment["INGEST_SOAK_LOG"],
            rotateRefreshTokens: environment["INGEST_SOAK_ROTATE_REFRESH_TOKENS"] != "0")
    }
}

/// What the client processes reported: every transaction whose `write {}`
/// returned (it must be in the database once, whole) and every one that threw
/// (it must not be there). Also appended to a log file as it arrives.
final class SoakLedger: @unchecked Sendable {  // all state behind `box`
    struct State {
        var committed: [Int: Int] = [:]  // tx → objects
        var failed: [Int: Int] = [:]  // tx → objects
        var failuresByErrno: [Int32: Int] = [:]
        var syncErrors: [String: Int] = [:]
        var storeErrorsByErrno: [Int32: Int] = [:]
        var tokenRefreshes = 0
        var otherLines: [String] = []
        var committedObjects = 0
        var failedObjects = 0
        var firstFailure: String?
    }

    let box = LockedBox(State())
    private let logFD: Int32

    init(logPath: String) {
        logFD = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    }

    deinit { if logFD >= 0 { close(logFD) } }

    /// Records one line of a client's output.
    func record(_ line: String) {
        let words = line.split(separator: " ", maxSplits: 4)
        switch words.first {
        case "ok" where words.count == 3:
            guard let tx = Int(words[1]), let n = Int(words[2]) else { return }
            box.withLock {
                $0.committed[tx] = n
                $0.committedObjects += n
            }
            append(line)
        case "fail" where words.count >= 4:
            guard let tx = Int(words[1]), let n = Int(words[2]), let code = Int32(words[3]) else { return }
            box.withLock {
                $0.failed[tx] = n
                $0.failedObjects += n
                $0.failuresByErrno[code, default: 0] += 1
                if $0.firstFailure == nil { $0.firstFailure = line }
            }
            append(line)
        case "storeerror" where words.count >= 2:
            let code = Int32(words[1]) ?? 0
            box.withLock { $0.storeErrorsByErrno[code, default: 0] += 1 }
        case "token-refreshed":
            box.withLock { $0.tokenRefreshes += 1 }
        case "syncerror":
            let code = words.count > 1 ? String(words[1]) : "?"
            box.withLock { $0.syncErrors[code, default: 0] += 1 }
        default:
            box.withLock { if $0.otherLines.count < 200 { $0.otherLines.append(line) } }
        }
    }

    private func append(_ line: String) {
        guard logFD >= 0 else { return }
        var bytes = Array(line.utf8)
        bytes.append(10)
        _ = bytes.withUnsafeBytes { write(logFD, $0.baseAddress, $0.count) }
    }

    /// Makes the log durable (called after each client run and at the end).
    func sync() { if logFD >= 0 { fsync(logFD) } }
}

/// One run of `sync-client-child soak`: a real client process, its output
/// read line by line into the ledger by a reader thread, commands sent on
/// its standard input, killed by PID.
final class SoakClient: @unchecked Sendable {  // mutable state behind `box`
    struct State {
        var ready = false
        var finalLine: String?
        var finalLineAt: Double?
        var readerDone = false
        var fullLimit: UInt64?
    }

    let process = Process()
    let box = LockedBox(State())
    private let input = Pipe()
    private let output = Pipe()
    private(set) var killedByTest = false

    init(directory: String, appId: String, baseURL: URL, firstSeq: Int, durability: String, ledger: SoakLedger) throws {
        process.executableURL = URL(fileURLWithPath: try builtExecutable("sync-client-child"))
        process.arguments = ["soak", String(firstSeq), durability]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        environment["APP_ID"] = appId
        environment["DATAINGEST_BASE_URL"] = baseURL.absoluteString
        environment["DATAINGEST_METADATA_DIRECTORY"] = nil
        process.environment = environment
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let fd = output.fileHandleForReading.fileDescriptor
        let box = self.box
        let reader = Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            // Until end of file (the child is gone and every line it wrote is
            // read); bounded by count too.
            for _ in 0..<1_000_000_000 {
                let n = read(fd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending.append(contentsOf: buffer[..<n])
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    ledger.record(line)
                    box.withLock { state in
                        if line == "ready" { state.ready = true }
                        if line.hasPrefix("uploaded ") || line.hasPrefix("drain-failed") {
                            state.finalLine = line
                            state.finalLineAt = monotonicNow()
                        }
                    }
                }
            }
            // A last line without its newline was cut by the kill: not reported.
            box.withLock { $0.readerDone = true }
        }
        reader.start()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// Waits (bounded) for "ready"; false if the child exited or did not get there.
    func waitUntilReady(timeout: Double) -> Bool {
        eventually(timeout: timeout) { box.withLock { $0.ready } || !process.isRunning } && box.withLock { $0.ready }
    }

    /// Sends one command line; nothing if the child is gone (SIGPIPE is ignored).
    func send(_ command: String) {
        guard process.isRunning else { return }
        let bytes = Array((command + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(input.fileHandleForWriting.fileDescriptor, $0.baseAddress, $0.count) }
    }

    /// `kill -9` by PID, then waits for the exit and for the reader to take
    /// every line written before it (bounded).
    func kill9() {
        if process.isRunning {
            killedByTest = true
            kill(process.processIdentifier, SIGKILL)
        }
        reap(process, within: 30)
        _ = eventually(timeout: 10) { box.withLock { $0.readerDone } }
    }
}

/// What the sink holds of the soak's objects, grouped by transaction.
struct SoakDatabase {
    struct Transaction {
        var rows: Int
        var minSeq: Int
        var maxSeq: Int
        var minN: Int
        var maxN: Int
        /// All `n` objects of the transaction, seqs tx..<tx+n, each once.
        func isWhole(tx: Int) -> Bool {
            minN == maxN && rows == minN && minSeq == tx && maxSeq == tx + rows - 1
        }
    }

    var rows = 0
    var distinctSeq = 0
    var distinctIds = 0
    var transactions: [Int: Transaction] = [:]

    /// Reads the SoakReading table of the SQLite sink at `path`.
    static func read(path: String) throws -> SoakDatabase {
        let db = try SQLiteConnection(path: path, options: .init(access: .readOnly, busyTimeoutMilliseconds: 10_000))
        func each(_ sql: String, _ row: (SQLiteStatement) -> Void) throws {
            let statement = try db.makeStatement(sql: sql)
            while try statement.step() { row(statement) }
        }
        var result = SoakDatabase()
        try each("SELECT count(*), count(DISTINCT seq), count(DISTINCT _id) FROM SoakReading") {
            result.rows = Int($0.int64(at: 0))
            result.distinctSeq = Int($0.int64(at: 1))
            result.distinctIds = Int($0.int64(at: 2))
        }
        try each("SELECT tx, count(*), min(seq), max(seq), min(n), max(n) FROM SoakReading GROUP BY tx") {
            let tx = Int($0.int64(at: 0))
            result.transactions[tx] = Transaction(
                rows: Int($0.int64(at: 1)), minSeq: Int($0.int64(at: 2)),
                maxSeq: Int($0.int64(at: 3)), minN: Int($0.int64(at: 4)),
                maxN: Int($0.int64(at: 5)))
        }
        return result
    }
}
