#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import Logging

// IngestLogger through its public API, as an app uses it: an App logged in
// to a real `ingest-server` (built next to this binary) on 127.0.0.1, a
// `LogWriter(user:)`, an `IngestLogger`. Next to it, in the same run, the
// same lines written with `print` (standard output redirected to a file),
// `fputs` to a `FILE*`, and `FileHandle.write`.
//
// 1. The cost of one enabled call on the caller's thread: rounds of
//    INGEST_BENCH_LOGGER_ROUND calls (default 20,000, less than the queue's
//    capacity, so nothing is dropped), `flush()` between rounds (not timed),
//    the median of the rounds' per-call averages.
// 2. The cost of a disabled call (`debug` with the level at `.info`), called
//    through a non-inlined function so the level check cannot be hoisted out
//    of the loop; baseline: the same non-inlined function logging nothing.
// 3. The same call through swift-log's `Logger`: with DataIngest's
//    `IngestLogHandler` (rounds and flushes as in 1), with swift-log's
//    `StreamLogHandler` writing to a file (standard output redirected), and
//    disabled (`debug` below `.info`, through a non-inlined function as in 2).
// 4. Sustained events/s into the store: INGEST_BENCH_LOGGER_EVENTS events
//    (default 1,000,000) from one thread, `whenFull = .wait` so none is
//    dropped, until `flush()` returns (all committed to the segment store);
//    uploads suspended meanwhile so the figure is the store's. Then the
//    uploads resume and every committed event is checked in the server's SQLite.

/// Holds the logger in a `let` of a class, as an app keeps its logger: each
/// call reads the level from memory.
private final class LoggerHolder {
    let logger: IngestLogger
    /// Never negative; read by the baseline of the disabled call.
    let marker: Int
    init(_ logger: IngestLogger) {
        self.logger = logger
        marker = Int(getpid())
    }
}

@inline(never)
private func enabledCall(_ holder: LoggerHolder, _ i: Int) {
    holder.logger.info("request \(i) handled in \(i % 97) ms", metadata: ["path": "/api/items"])
}

@inline(never)
private func disabledCall(_ holder: LoggerHolder, _ i: Int) {
    holder.logger.debug("request \(i) handled in \(i % 97) ms", metadata: ["path": "/api/items"])
}

/// Holds a swift-log `Logger` as an app or a library keeps one.
private final class SwiftLoggerHolder {
    let logger: Logging.Logger
    init(_ logger: Logging.Logger) { self.logger = logger }
}

@inline(never)
private func swiftLogEnabledCall(_ holder: SwiftLoggerHolder, _ i: Int) {
    holder.logger.info("request \(i) handled in \(i % 97) ms", metadata: ["path": "/api/items"])
}

/// The same call for the StreamLogHandler baseline (a function of its own,
/// so that callgrind's `--toggle-collect` can tell the two apart).
@inline(never)
private func swiftLogStreamCall(_ holder: SwiftLoggerHolder, _ i: Int) {
    holder.logger.info("request \(i) handled in \(i % 97) ms", metadata: ["path": "/api/items"])
}

@inline(never)
private func swiftLogDisabledCall(_ holder: SwiftLoggerHolder, _ i: Int) {
    holder.logger.debug("request \(i) handled in \(i % 97) ms", metadata: ["path": "/api/items"])
}

/// The disabled call's baseline: the same non-inlined call making one
/// comparison of a value loaded from the holder, no logging.
@inline(never)
private func emptyCall(_ holder: LoggerHolder, _ i: Int) {
    if holder.marker < 0 { print("request \(i)") }
}

/// The line the baselines write: the logger's level, label and message and
/// the call's metadata, as a print-based logger would write it.
@inline(__always)
private func baselineLine(_ i: Int) -> String {
    "info com.example.bench: request \(i) handled in \(i % 97) ms path=/api/items\n"
}

/// The median per-call time of `rounds` rounds of `iterations` calls of
/// `body` (after one warm-up round), both as wall time and as this
/// thread's CPU time (user + system; less sensitive to other processes
/// taking the cores). `between` runs after each round, untimed. With
/// INGEST_BENCH_LOGGER_PER_ROUND set, a `name`d measurement also prints
/// each round's figures and this thread's minor page faults to standard error.
private func medianPerCall(
    _ name: String? = nil, rounds: Int = 9, iterations: Int, between: () throws -> Void = {},
    _ body: (Int) throws -> Void
) throws -> (wall: Double, cpu: Double) {
    for i in 0..<iterations { try body(i) }
    try between()
    var wall: [Double] = []
    var cpu: [Double] = []
    var faults: [Int] = []
    for r in 0..<rounds {
        let base = (r + 1) * iterations
        let faultsStart = threadMinorFaults()
        let cpuStart = threadCPUNanoseconds()
        let start = nowNanoseconds()
        for i in base..<(base + iterations) { try body(i) }
        wall.append(Double(nowNanoseconds() - start) / Double(iterations))
        cpu.append(Double(threadCPUNanoseconds() - cpuStart) / Double(iterations))
        faults.append(threadMinorFaults() - faultsStart)
        try between()
    }
    if let name, ProcessInfo.processInfo.environment["INGEST_BENCH_LOGGER_PER_ROUND"] != nil {
        let line =
            "logger per round, \(name): wall ns \(wall.map { Int($0) }), CPU ns \(cpu.map { Int($0) }), "
            + "minor page faults \(faults)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
    return (wall.sorted()[rounds / 2], cpu.sorted()[rounds / 2])
}

/// This thread's CPU time (user + system) in nanoseconds.
private func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// This thread's minor page faults so far.
private func threadMinorFaults() -> Int {
    var usage = rusage()
    getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD (Linux): not imported without _GNU_SOURCE
    return usage.ru_minflt
}

/// The CPU seconds of each thread of this process but the calling one, by thread id.
private func otherThreadsCPUSeconds() -> [Int: Double] {
    let own = Int(getpid())
    var result: [Int: Double] = [:]
    for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
        guard let tid = Int(task), tid != own else { continue }
        result[tid] = threadCPUSeconds(tid)
    }
    return result
}

/// User + system CPU seconds of thread `tid` of this process (clock ticks).
private func threadCPUSeconds(_ tid: Int) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

struct LoggerBenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func loggerBenchmarks() throws -> [Figure] {
    let environment = ProcessInfo.processInfo.environment
    let round = max(1_000, Int(environment["INGEST_BENCH_LOGGER_ROUND"] ?? "") ?? 20_000)
    let sustained = max(10_000, Int(environment["INGEST_BENCH_LOGGER_EVENTS"] ?? "") ?? 1_000_000)
    let rounds = 9

    let directory = NSTemporaryDirectory() + "ingest-bench-logger-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }

    let server = try ServerBenchProcess(directory: directory)
    defer { server.stop() }
    var appConfiguration = App.Configuration(
        baseURL: URL(string: "http://127.0.0.1:\(server.port)")!,
        metadataDirectory: directory + "/client")
    appConfiguration.sync.maximumBackoff = 1
    let app = App(id: server.appId, configuration: appConfiguration)
    let user = try blocking { try await app.login(credentials: .anonymous) }

    var writerConfiguration = LogWriter.Configuration()
    writerConfiguration.queueCapacity = max(65_536, 2 * round)
    // No event dropped in the sustained run: the caller waits for room.
    writerConfiguration.whenFull = .wait(milliseconds: 10_000)
    let writer = try LogWriter(user: user, configuration: writerConfiguration)
    defer { writer.shutdown() }
    var logger = IngestLogger(label: "com.example.bench", writer: writer)
    logger.logLevel = .info
    let holder = LoggerHolder(logger)

    // 1. One enabled call on the caller's thread.
    user.session.suspend()
    let enabled = try medianPerCall(
        "IngestLogger enabled call", rounds: rounds, iterations: round,
        between: {
            guard writer.flush(timeout: 120) else { throw LoggerBenchError("flush timed out") }
        }
    ) { enabledCall(holder, $0) }
    let afterRounds = writer.currentStatistics
    guard afterRounds.droppedEvents == 0, afterRounds.committedEvents == (rounds + 1) * round else {
        throw LoggerBenchError(
            "enabled calls: \(afterRounds.committedEvents) committed, \(afterRounds.droppedEvents) dropped of \((rounds + 1) * round)")
    }

    // 2. One disabled call.
    let disabled = try medianPerCall(iterations: 5_000_000) { disabledCall(holder, $0) }
    let empty = try medianPerCall(iterations: 5_000_000) { emptyCall(holder, $0) }
    guard writer.currentStatistics.acceptedEvents == afterRounds.acceptedEvents else {
        throw LoggerBenchError("a disabled call was recorded")
    }

    // 3. swift-log's Logger: through IngestLogHandler, through StreamLogHandler to a file, disabled.
    let swiftHolder = SwiftLoggerHolder(Logging.Logger(label: "com.example.bench", factory: IngestLogHandler.factory(writer)))
    let beforeSwiftLog = writer.currentStatistics
    let swiftLogEnabled = try medianPerCall(
        "swift-log enabled call", rounds: rounds, iterations: round,
        between: {
            guard writer.flush(timeout: 120) else { throw LoggerBenchError("flush timed out") }
        }
    ) { swiftLogEnabledCall(swiftHolder, $0) }
    let afterSwiftLog = writer.currentStatistics
    guard afterSwiftLog.droppedEvents == 0,
        afterSwiftLog.committedEvents - beforeSwiftLog.committedEvents == (rounds + 1) * round
    else {
        throw LoggerBenchError(
            "swift-log calls: \(afterSwiftLog.committedEvents - beforeSwiftLog.committedEvents) committed, \(afterSwiftLog.droppedEvents) dropped of \((rounds + 1) * round)"
        )
    }
    let swiftLogDisabled = try medianPerCall(iterations: 5_000_000) { swiftLogDisabledCall(swiftHolder, $0) }
    guard writer.currentStatistics.acceptedEvents == afterSwiftLog.acceptedEvents else {
        throw LoggerBenchError("a disabled swift-log call was recorded")
    }
    let streamPath = directory + "/stream-log-handler.log"
    let streamed = try withStandardOutput(redirectedTo: streamPath) {
        let streamHolder = SwiftLoggerHolder(
            Logging.Logger(label: "com.example.bench", factory: { label in StreamLogHandler.standardOutput(label: label) }))
        return try medianPerCall(rounds: rounds, iterations: round) { swiftLogStreamCall(streamHolder, $0) }
    }
    let streamedLines = (try? String(contentsOfFile: streamPath, encoding: .utf8))?.split(separator: "\n").count ?? 0
    guard streamedLines == (rounds + 1) * round else {
        throw LoggerBenchError("StreamLogHandler wrote \(streamedLines) lines of \((rounds + 1) * round)")
    }

    // The baselines, per line, same rounds.
    let printPath = directory + "/print.log"
    let fputsPath = directory + "/fputs.log"
    let handlePath = directory + "/filehandle.log"
    let printed = try withStandardOutput(redirectedTo: printPath) {
        try medianPerCall("print", rounds: rounds, iterations: round) { print(baselineLine($0), terminator: "") }
    }
    guard let file = fopen(fputsPath, "w") else { throw LoggerBenchError("cannot open \(fputsPath)") }
    let fputsTimes = try medianPerCall(rounds: rounds, iterations: round) { fputs(baselineLine($0), file) }
    fclose(file)
    _ = FileManager.default.createFile(atPath: handlePath, contents: nil)
    guard let handle = FileHandle(forWritingAtPath: handlePath) else { throw LoggerBenchError("cannot open \(handlePath)") }
    let handled = try medianPerCall(rounds: rounds, iterations: round) {
        try handle.write(contentsOf: Data(baselineLine($0).utf8))
    }
    try handle.close()

    // 4. Sustained events/s into the store, and the same number of lines
    // through print and FileHandle.
    let before = writer.currentStatistics
    // The writer thread: the one (besides this) that works during the run;
    // uploads are suspended, so the others are idle.
    let threadsBefore = otherThreadsCPUSeconds()
    let callerCPUBefore = threadCPUNanoseconds()
    let sustainedStart = nowNanoseconds()
    for i in 0..<sustained { enabledCall(holder, i) }
    guard writer.flush(timeout: 600) else { throw LoggerBenchError("flush of the sustained run timed out") }
    let sustainedSeconds = Double(nowNanoseconds() - sustainedStart) / 1e9
    let callerCPUPerEvent = Double(threadCPUNanoseconds() - callerCPUBefore) / Double(sustained)
    let busiest = otherThreadsCPUSeconds().map { ($0.value - (threadsBefore[$0.key] ?? 0)) }.max() ?? 0
    let writerCPUPerEvent: Double? = busiest > 0 ? busiest * 1e9 / Double(sustained) : nil
    let after = writer.currentStatistics
    guard after.committedEvents - before.committedEvents == sustained, after.droppedEvents == 0 else {
        throw LoggerBenchError(
            "sustained: \(after.committedEvents - before.committedEvents) of \(sustained) committed, \(after.droppedEvents) dropped")
    }
    let sustainedRate = Double(sustained) / sustainedSeconds

    let printRate = try withStandardOutput(redirectedTo: printPath) {
        let start = nowNanoseconds()
        for i in 0..<sustained { print(baselineLine(i), terminator: "") }
        fflush(nil)
        return Double(sustained) / (Double(nowNanoseconds() - start) / 1e9)
    }
    _ = FileManager.default.createFile(atPath: handlePath, contents: nil)
    guard let handle2 = FileHandle(forWritingAtPath: handlePath) else { throw LoggerBenchError("cannot open \(handlePath)") }
    let handleStart = nowNanoseconds()
    for i in 0..<sustained { try handle2.write(contentsOf: Data(baselineLine(i).utf8)) }
    try handle2.synchronize()
    let handleRate = Double(sustained) / (Double(nowNanoseconds() - handleStart) / 1e9)
    try handle2.close()

    // Every committed event reaches the server's SQLite once.
    user.session.resume()
    let uploadStart = nowNanoseconds()
    try blocking { try await user.session.wait(for: .upload, timeout: 600) }
    let uploadSeconds = Double(nowNanoseconds() - uploadStart) / 1e9
    let stored = server.query("SELECT count(*) FROM LogEvent").first ?? -1
    guard stored == Int64(after.committedEvents) else {
        throw LoggerBenchError("the server's SQLite holds \(stored) LogEvent rows, \(after.committedEvents) were committed")
    }

    let callName = "enabled call (info, 2 interpolations, 1 metadata entry), median of \(rounds) × \(round)"
    return [
        Figure(
            group: "logger", name: callName + ", caller's wall time",
            value: enabled.wall, unit: "ns", baseline: ("print of the same line, stdout to a file", printed.wall),
            target: .atMost(250)),
        Figure(
            group: "logger", name: "  same, caller's thread CPU time", value: enabled.cpu, unit: "ns",
            baseline: ("print, thread CPU time", printed.cpu), target: .atMost(300)),
        Figure(
            group: "logger", name: "  same, wall", value: enabled.wall, unit: "ns",
            baseline: ("fputs of the same line to a FILE*", fputsTimes.wall), target: nil),
        Figure(
            group: "logger", name: "  same, wall", value: enabled.wall, unit: "ns",
            baseline: ("FileHandle.write of the same line", handled.wall), target: nil),
        Figure(
            group: "logger", name: "disabled call (debug below .info) through a non-inlined function, wall",
            value: disabled.wall, unit: "ns", baseline: ("the same call comparing an Int instead, wall", empty.wall),
            target: .atMost(5)),
        Figure(
            group: "logger", name: "  same, thread CPU time", value: disabled.cpu, unit: "ns",
            baseline: ("the same call comparing an Int instead, CPU", empty.cpu), target: .atMost(5)),
        Figure(
            group: "logger", name: "swift-log Logger, the same call through IngestLogHandler, caller's wall time",
            value: swiftLogEnabled.wall, unit: "ns",
            baseline: ("the same call through StreamLogHandler, stdout to a file", streamed.wall), target: .atMost(400)),
        Figure(
            group: "logger", name: "  same, caller's thread CPU time", value: swiftLogEnabled.cpu, unit: "ns",
            baseline: ("StreamLogHandler, thread CPU time", streamed.cpu), target: nil),
        Figure(
            group: "logger", name: "  same, wall", value: swiftLogEnabled.wall, unit: "ns",
            baseline: ("IngestLogger's call (above)", enabled.wall), target: nil),
        Figure(
            group: "logger", name: "swift-log Logger, disabled call (debug below .info) through a non-inlined function, wall",
            value: swiftLogDisabled.wall, unit: "ns", baseline: ("the same call comparing an Int instead, wall", empty.wall),
            target: nil),
        Figure(
            group: "logger", name: "  same, thread CPU time", value: swiftLogDisabled.cpu, unit: "ns",
            baseline: ("IngestLogger's disabled call, CPU", disabled.cpu), target: nil),
        Figure(
            group: "logger", name: "sustained: \(sustained) events from 1 thread committed to the segment store (uploads paused)",
            value: sustainedRate, unit: "events/s", baseline: ("print of the same lines, stdout to a file", printRate),
            target: .atLeast(300_000)),
        Figure(
            group: "logger", name: "  same sustained run", value: sustainedRate, unit: "events/s",
            baseline: ("FileHandle.write of the same lines", handleRate), target: nil),
        Figure(
            group: "logger", name: "  CPU time per event in that run: the caller's thread", value: callerCPUPerEvent, unit: "ns",
            baseline: nil, target: nil),
    ]
        + (writerCPUPerEvent.map {
            [
                Figure(
                    group: "logger",
                    name:
                        "  CPU time per event in that run: the busiest other thread, the writer (1e9 / this = its events/s on a free core)",
                    value: $0, unit: "ns", baseline: nil, target: .atMost(1e9 / 300_000))
            ]
        } ?? []) + [
            Figure(
                group: "logger", name: "then upload of all \(after.committedEvents) events into the server's SQLite",
                value: Double(after.committedEvents) / uploadSeconds, unit: "events/s", baseline: nil, target: nil)
        ]
}

/// Runs `body` with file descriptor 1 pointing at `path` (created or
/// truncated), then restores it. Standard output is flushed before and after.
private func withStandardOutput<T>(redirectedTo path: String, _ body: () throws -> T) throws -> T {
    fflush(nil)
    let saved = dup(STDOUT_FILENO)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard saved >= 0, fd >= 0 else {
        if saved >= 0 { close(saved) }
        throw LoggerBenchError("cannot redirect standard output to \(path): errno \(errno)")
    }
    dup2(fd, STDOUT_FILENO)
    close(fd)
    defer {
        fflush(nil)
        dup2(saved, STDOUT_FILENO)
        close(saved)
    }
    return try body()
}
