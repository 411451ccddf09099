#if canImport(Glibc)
import Glibc
#endif
import CoreMetrics
import DataIngest
import Foundation
import IngestSupport

/// What to do with rotated files compressed with gzip (`--gzip`).
enum GzipMode: String {
    /// Read a `.gz` file: the rest of a generation that was compressed before
    /// it was read to its end, or a whole new one.
    case read
    /// Never open `.gz` files.
    case skip
}

/// The settings of one run that the forwarder itself uses.
struct ForwardSettings {
    var format: LineFormat = .plain
    var batchLines = 1_000
    var fingerprintBytes = 256
    var maxOpenFiles = 256
    var gzip: GzipMode = .read
    var once = false
    var quiet = false
    /// Seconds between scans of the patterns for new, rotated and vanished
    /// files (with inotify also the safety net for lost events).
    var scanInterval = 1.0
    /// Poll files for growth every 100 ms instead of waiting for inotify.
    var poll = false
    /// The store's disk budget (for the messages).
    var maxPendingBytes = 1 << 30
    /// Multiline events: how lines are joined, at most how many bytes, and
    /// how long an event waits for its next line.
    var multiline: Multiline?
    var multilineMaxBytes = 65_536
    var multilineTimeout = 1.0
}

/// Which files one source names and how their lines are read: a FILE
/// argument list with the command line's format and multiline options, or
/// one entry of the configuration file's `sources`.
struct SourceRule {
    var patterns: [PathPattern]
    var format: LineFormat = .plain
    var multiline: Multiline?
    var multilineMaxBytes = 65_536
    var multilineTimeout = 1.0
}

/// A container message being joined from its parts (CRI `P` lines, Docker
/// `log` values without their `\n`): not in the batch, so not in the
/// cursor, until its last part came.
struct ContainerJoin {
    var start: Int
    var end: Int
    var text: String
    var stream: String
    var time: Date?
    var at: Date
    /// The message's first parts were already sent (it grew too long).
    var split: Bool
}

/// What a container line's parts said of the message (see ``LineParser/container(_:format:stream:time:partial:)``).
struct ContainerMeta {
    var stream: String
    var time: Date?
    var partial: Bool
}

/// How lines form one event (one `ForwardedLine`, lines joined with `\n`).
enum Multiline {
    /// A line matching the pattern starts a new event; any other line
    /// continues the one before (e.g. `^\d{4}-\d{2}-\d{2}` for timestamped logs).
    case start(NSRegularExpression)
    /// A line matching the pattern continues the event before it (e.g.
    /// `^\s` for indented stack frames, `^(\s|Caused by:|Traceback)`).
    case continuation(NSRegularExpression)

    func continues(_ line: String) -> Bool {
        let range = NSRange(line.startIndex..., in: line)
        switch self {
        case .start(let pattern): return pattern.firstMatch(in: line, range: range) == nil
        case .continuation(let pattern): return pattern.firstMatch(in: line, range: range) != nil
        }
    }
}

/// One file generation being read (see ``FileCursor``).
final class Tail {
    /// The committed position (what the store's cursor holds once `isCommitted`).
    var cursor: FileCursor
    var isCommitted: Bool
    /// Open while being read; -1 while closed (``ForwardSettings/maxOpenFiles``).
    var fd: Int32 = -1
    /// The whole decompressed content of a `.gz` file.
    var content: [UInt8]?
    /// The next byte to read.
    var readOffset: Int
    /// Bytes of an incomplete last line, and where they start.
    var partial: [UInt8] = []
    var partialStart: Int
    /// When its path was last seen naming another file (or none), at its end.
    var rotatedAt: Date?
    /// Last time it read something (closing idle files first).
    var lastActive = Date()
    /// A closed tail whose file grew (seen by the last scan).
    var ready = false
    /// The multiline event being gathered: where it starts and ends, its
    /// text, when its last line came. Not committed (nor in the cursor) until
    /// it is complete, so a restart reads it again from its first line.
    var event: (start: Int, end: Int, text: String, at: Date, meta: ContainerMeta?)?
    /// The container message being joined from its parts (`docker`, `cri`).
    var joining: ContainerJoin?
    /// The format and multiline rules of the source that named the file.
    var rule: SourceRule
    /// Standard input: its lines carry no cursor.
    var isStandardInput = false

    init(cursor: FileCursor, isCommitted: Bool, rule: SourceRule) {
        self.rule = rule
        self.cursor = cursor
        self.isCommitted = isCommitted
        readOffset = cursor.offset
        partialStart = cursor.offset
    }
}

/// Reads lines from files (paths and globs) or standard input, commits them
/// in batches to the synced realm, each transaction with the cursors of the
/// file generations it covers. Confined to the main actor, like the realm.
@MainActor
final class Forwarder {
    private let realm: Realm
    private let session: SyncSession
    private let settings: ForwardSettings
    private let shouldStop: () -> Bool
    private let host: String
    private let showProgress: Bool

    private struct Line {
        var tail: Tail?
        var id: String
        var source: String
        var offset: Int
        var end: Int
        var text: String
        var format: LineFormat
        var meta: ContainerMeta?
    }

    private var batch: [Line] = []
    /// The object each line is copied into `create` from (never added itself).
    private let reusableLine = ForwardedLine()
    private var committedLines = 0
    private var transactions = 0
    private let start = Date()
    private var lastProgress = Date.distantPast
    private var progressShown = false
    private let acknowledgedAtStart: Int

    // Files.
    private var sources: [SourceRule] = []
    /// Wakes the loop on changes (inotify), or polls.
    private let watcher: FileWatcher
    /// The directories the last scan looked in (watched, with those of the tails).
    private var scannedDirectories: Set<String> = []
    /// Idle rounds and those an inotify event ended early.
    private var waits = 0
    private var wakes = 0
    private var tails: [Tail] = []
    /// Every generation the store has a cursor for, by source id.
    private var known: [String: FileCursor] = [:]
    /// Compressed files already looked at (device, inode, size).
    private var seenCompressed: Set<[UInt64]> = []
    private var openFiles = 0
    /// Cursor changes to commit with the next transaction (finished, forgotten).
    private var cursorChanges: [(name: String, value: [UInt8])] = []

    // Backpressure.
    private(set) var blockedSince: Date?
    private var blockedSeconds = 0.0
    private var blockedTimes = 0
    private var lastFullMessage = Date.distantPast

    // Metrics (`--metrics-file`): the gauge says whether a full store pauses reading.
    private let metricsFile: MetricsFile?
    private let pausedGauge: (any RecorderHandler)?
    private let filesGauge: (any RecorderHandler)?
    private let linesCounter: (any CounterHandler)?
    private var lastMetrics = Date.distantPast

    init(
        realm: Realm, session: SyncSession, settings: ForwardSettings, metricsFile: MetricsFile? = nil,
        shouldStop: @escaping () -> Bool
    ) {
        self.metricsFile = metricsFile
        pausedGauge = metricsFile?.makeRecorder(label: "ingest_forward_reading_paused", dimensions: [], aggregate: false)
        filesGauge = metricsFile?.makeRecorder(label: "ingest_forward_files", dimensions: [], aggregate: false)
        linesCounter = metricsFile?.makeCounter(label: "ingest_forward_lines_total", dimensions: [])
        self.realm = realm
        self.session = session
        self.settings = settings
        self.shouldStop = shouldStop
        var name = [CChar](repeating: 0, count: 256)
        host =
            gethostname(&name, 255) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        showProgress = !settings.quiet && isatty(STDERR_FILENO) == 1
        watcher = FileWatcher(poll: settings.poll)
        acknowledgedAtStart = session.storeCounters?.acknowledgedObjects ?? 0
    }

    // MARK: - Committing

    /// Commits the batch in transactions of at most `batchLines` lines; each
    /// sets the cursor of every file generation it holds lines of (at the end
    /// of its last line there), and the last one the pending cursor changes.
    /// A full store (its disk budget) blocks here, retried, never dropped.
    private func commitBatch() throws {
        var start = 0
        repeat {
            let end = min(batch.count, start + settings.batchLines)
            let chunk = batch[start..<end]
            var advanced: [ObjectIdentifier: (Tail, FileCursor)] = [:]
            // Runs of lines of one tail advance one cursor: a hashed lookup
            // per run, not per line.
            var run: (tail: Tail, cursor: FileCursor)?
            for line in chunk {
                guard let tail = line.tail else { continue }
                if run?.tail !== tail {
                    if let run { advanced[ObjectIdentifier(run.tail)] = run }
                    run = (tail, advanced[ObjectIdentifier(tail)]?.1 ?? tail.cursor)
                }
                run!.cursor.offset = line.end
                run!.cursor.lines += 1
            }
            if let run { advanced[ObjectIdentifier(run.tail)] = run }
            for (key, entry) in advanced {
                var cursor = entry.1
                if cursor.fingerprintBytes < settings.fingerprintBytes, let prefix = self.prefix(of: entry.0) {
                    cursor.fingerprintBytes = prefix.count
                    cursor.fingerprint = Fingerprint.of(prefix)
                }
                advanced[key] = (entry.0, cursor)
            }
            let changes = end == batch.count ? cursorChanges : []
            guard !chunk.isEmpty || !changes.isEmpty else { break }
            let received = Date()
            // One unmanaged object, filled per line and copied into the
            // transaction by `create`: no dictionary and no `Any` per value.
            let object = reusableLine
            object.host = host
            object.receivedAt = received
            // Test seam: die with the lines read and their cursors worked out, not committed.
            if !chunk.isEmpty, transactions + 1 == Self.killBeforeCommit { kill(getpid(), SIGKILL) }
            try writeBlockingWhenFull {
                for line in chunk {
                    let parsed =
                        line.meta.map {
                            LineParser.container(line.text, format: line.format, stream: $0.stream, time: $0.time, partial: $0.partial)
                        } ?? LineParser.parse(line.text, as: line.format)
                    object._id = line.id
                    object.source = line.source
                    object.offset = line.offset
                    object.format = parsed.format
                    object.message = parsed.message
                    object.timestamp = parsed.timestamp
                    object.level = parsed.level
                    object.fields = parsed.fields
                    realm.create(ForwardedLine.self, value: object)
                }
                for (_, (_, cursor)) in advanced { realm.setCursor(cursor.encoded(), named: cursor.cursorName) }
                for change in changes { realm.setCursor(change.value, named: change.name) }
            }
            for (_, (tail, cursor)) in advanced {
                tail.cursor = cursor
                tail.isCommitted = true
                known[cursor.sourceId] = cursor
            }
            if !changes.isEmpty { cursorChanges.removeAll() }
            if !chunk.isEmpty {
                committedLines += chunk.count
                linesCounter?.increment(by: Int64(chunk.count))
                transactions += 1
                // Test seam: die right after a commit (its cursor is in it).
                if transactions == Self.killAfterCommit { kill(getpid(), SIGKILL) }
            }
            start = end
        } while start < batch.count
        batch.removeAll(keepingCapacity: true)
        progress()
    }

    /// Runs the write; while the store's disk budget is full
    /// (`storageFull`), waits and retries instead of dropping lines, and
    /// says so on the progress line, in the summary and once on standard
    /// error. A stop request while blocked throws ``Stopped`` (the lines stay
    /// uncommitted, so the next run reads them again from the cursor).
    private func writeBlockingWhenFull(_ body: () -> Void) throws {
        while true {
            do {
                try realm.write(body)
                if let since = blockedSince {
                    blockedSeconds += Date().timeIntervalSince(since)
                    blockedSince = nil
                    reportMetrics(force: true)
                }
                return
            } catch let error as RealmError where (error.underlyingError as? SegmentStoreError)?.code == .storageFull {
                if blockedSince == nil {
                    blockedSince = Date()
                    blockedTimes += 1
                    // Said once a minute at most: a store at its budget fills again at once.
                    if !settings.quiet && Date().timeIntervalSince(lastFullMessage) >= 60 {
                        lastFullMessage = Date()
                        FileHandle.standardError.write(
                            Data(
                                "ingest-forward: the store is full (its disk budget, --max-pending-bytes \(settings.maxPendingBytes)); reading pauses until the server has acknowledged more, nothing is dropped\n"
                                    .utf8))
                    }
                }
                progress(force: true)
                reportMetrics()
                if shouldStop() { throw Stopped() }
            }
        }
    }

    /// Thrown when a stop was requested while the store was full.
    struct Stopped: Error {}

    /// `INGEST_FORWARD_TEST_KILL_AFTER_COMMIT=N`: the process kills itself
    /// with SIGKILL right after its Nth commit of lines (a test seam). Unset: never.
    private static let killAfterCommit: Int? =
        ProcessInfo.processInfo.environment["INGEST_FORWARD_TEST_KILL_AFTER_COMMIT"].flatMap { Int($0) }

    /// `INGEST_FORWARD_TEST_KILL_BEFORE_COMMIT=N`: the process kills itself
    /// with SIGKILL right before its Nth commit of lines, with those lines
    /// read (a test seam). Unset: never.
    private static let killBeforeCommit: Int? =
        ProcessInfo.processInfo.environment["INGEST_FORWARD_TEST_KILL_BEFORE_COMMIT"].flatMap { Int($0) }

    // MARK: - Standard input

    /// Standard input cannot be resumed: each run is a new source.
    func forwardStandardInput() throws {
        let run = "stdin-" + ObjectId.generate().hex
        var offset = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var partial: [UInt8] = []
        var partialStart = 0
        // Container parts are joined as in files; multiline does not apply.
        let input = Tail(
            cursor: FileCursor(
                sourceId: run, path: "-", device: 0, inode: 0, fingerprint: "", fingerprintBytes: 0, offset: 0, lines: 0,
                finished: false),
            isCommitted: false, rule: SourceRule(patterns: [], format: settings.format, multilineMaxBytes: settings.multilineMaxBytes))
        input.isStandardInput = true
        while !shouldStop() {
            let n = Glibc.read(STDIN_FILENO, &buffer, buffer.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw ForwardError("reading standard input failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            Self.split(buffer[0..<n], at: offset, partial: &partial, partialStart: &partialStart) { start, end, text in
                emit(input, start: start, end: end, text: text)
            }
            offset += n
            if batch.count >= settings.batchLines { try commitBatch() }
        }
        if !partial.isEmpty { emit(input, start: partialStart, end: offset, text: Self.text(partial)) }
        flushJoin(input)
        try commitBatch()
    }

    /// Calls `emit(start, end, text)` for each complete line of `chunk` (which
    /// starts at offset `offset`); keeps an incomplete last line in `partial`.
    private static func split(
        _ chunk: ArraySlice<UInt8>, at offset: Int, partial: inout [UInt8], partialStart: inout Int,
        _ emit: (Int, Int, String) -> Void
    ) {
        chunk.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            // memchr finds the newlines: a byte loop over the slice cost a
            // bounds check per byte, most of the plain path's splitting.
            var lineStart = 0
            while lineStart < bytes.count,
                let found = memchr(base + lineStart, 10, bytes.count - lineStart)
            {
                let index = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
                let end = offset + index + 1
                if partial.isEmpty {
                    emit(offset + lineStart, end, text(UnsafeBufferPointer(rebasing: bytes[lineStart..<index])))
                } else {
                    partial.append(contentsOf: bytes[lineStart..<index])
                    emit(partialStart, end, partial.withUnsafeBufferPointer { text($0) })
                    partial.removeAll(keepingCapacity: true)
                }
                lineStart = index + 1
            }
            if lineStart < bytes.count {
                if partial.isEmpty { partialStart = offset + lineStart }
                partial.append(contentsOf: bytes[lineStart...])
            }
        }
    }

    /// The line as a String, without a trailing `\r` (looked at as a byte:
    /// a `\r` is always a Character of its own before the line's end).
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes.last == 13 ? UnsafeBufferPointer(rebasing: bytes.dropLast()) : bytes, as: UTF8.self)
    }

    private static func text(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { text($0) }
    }

    // MARK: - Following files

    /// Follows the files `patterns` name (paths and globs) until stopped, or
    /// until each is read to its end with `once`. Resumes every generation
    /// from its cursor in the store.
    func follow(sources: [SourceRule]) throws {
        self.sources = sources
        let matchers = sources.flatMap(\.patterns)
        for (name, value) in try realm.cursors() where name.hasPrefix(FileCursor.namePrefix) {
            if let cursor = FileCursor.decode(value) { known[cursor.sourceId] = cursor }
        }
        scan(matchers)
        if settings.once && tails.isEmpty && !matchers.contains(where: \.hasWildcards) {
            throw ForwardError("cannot open \(matchers.map(\.pattern).joined(separator: " ")): no such file")
        }
        resumeOrphans()
        var lastScan = Date()
        var scanSoon = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
        if !settings.once { watchDirectories() }
        do {
            while !shouldStop() {
                var readAny = false
                for tail in tails where !shouldStop() {
                    if try read(tail, &buffer) { readAny = true }
                }
                if readAny { continue }
                flushEvents(all: false)
                try commitBatch()
                try checkEnds()
                if settings.once && tails.allSatisfy({ $0.readOffset >= size(of: $0) }) { break }
                let sinceScan = Date().timeIntervalSince(lastScan)
                if !settings.once && (sinceScan >= settings.scanInterval || (scanSoon && sinceScan >= 0.05)) {
                    scan(matchers)
                    forgetVanished(matchers)
                    watchDirectories()
                    lastScan = Date()
                    scanSoon = false
                    continue  // read what the scan found before waiting
                }
                progress()
                reportMetrics()
                let wake = watcher.wait(idleWait(sinceLastScan: Date().timeIntervalSince(lastScan), scanSoon: scanSoon))
                waits += 1
                if wake.changed { wakes += 1 }
                if wake.rescan { scanSoon = true }
                for tail in tails where tail.fd < 0 && wake.modified.contains(tail.cursor.path) { tail.ready = true }
            }
            if settings.once { flushEvents(all: true) }
            try commitBatch()
            if settings.once {
                for tail in tails where tail.content != nil { finish(tail) }
                try commitBatch()
            }
        } catch is Stopped {
            return
        }
    }

    /// How long an idle round waits. Polling: 100 ms, files are looked at
    /// again after it. With inotify a change ends the wait at once, so it
    /// lasts until the next scan, or 100 ms while something is timed: an
    /// event or container message waiting for its timeout, a rotated file
    /// waiting to be finished, a scan asked for by an event.
    private func idleWait(sinceLastScan: Double, scanSoon: Bool) -> Double {
        guard watcher.isWatching, !settings.once else { return 0.1 }
        if scanSoon { return 0.05 }
        let timed = tails.contains { $0.event != nil || $0.joining != nil || $0.rotatedAt != nil }
        return max(0.01, min(timed ? 0.1 : settings.scanInterval, settings.scanInterval - sinceLastScan))
    }

    /// Watches the directories of the last scan and of every file read.
    private func watchDirectories() {
        guard watcher.isWatching else { return }
        var directories = scannedDirectories
        for tail in tails where tail.content == nil {
            let directory = (tail.cursor.path as NSString).deletingLastPathComponent
            directories.insert(directory.isEmpty ? "." : directory)
        }
        watcher.watch(directories)
    }

    /// Reads up to 1 MiB of `tail` into the batch (committing full batches);
    /// `true` if it read anything.
    private func read(_ tail: Tail, _ buffer: inout [UInt8]) throws -> Bool {
        if let content = tail.content {
            guard tail.readOffset < content.count else { return false }
            let end = min(content.count, tail.readOffset + (1 << 20))
            take(tail, content[tail.readOffset..<end])
            if batch.count >= settings.batchLines { try commitBatch() }
            return true
        }
        if tail.fd < 0 {
            guard tail.ready || settings.once, openFiles < settings.maxOpenFiles || closeIdle() else { return false }
            tail.ready = false
            guard reopen(tail) else { return false }
        }
        var total = 0
        while total < 1 << 20 {
            let n = pread(tail.fd, &buffer, buffer.count, off_t(tail.readOffset))
            if n < 0 {
                if errno == EINTR { continue }
                throw ForwardError("reading \(tail.cursor.path) failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            take(tail, buffer[0..<n])
            total += n
            if batch.count >= settings.batchLines { try commitBatch() }
        }
        if total > 0 {
            tail.lastActive = Date()
            if tail.rotatedAt != nil { tail.rotatedAt = Date() }  // still written to: not finished yet
        }
        return total > 0
    }

    private func take(_ tail: Tail, _ bytes: ArraySlice<UInt8>) {
        Self.split(bytes, at: tail.readOffset, partial: &tail.partial, partialStart: &tail.partialStart) { start, end, text in
            emit(tail, start: start, end: end, text: text)
        }
        tail.readOffset += bytes.count
    }

    /// A complete line of `tail`. In a container format its parts are joined
    /// first: a partial part waits in `tail.joining` (bounded by the
    /// multiline max bytes) until the part that ends the message. Parts are
    /// joined in file order: a line of the other stream between two parts
    /// sends the gathered ones as they are (`partial` in `fields`), so that
    /// no committed line lies after an uncommitted one and the cursor stays
    /// exact.
    private func emit(_ tail: Tail, start: Int, end: Int, text: String) {
        let format = tail.rule.format
        guard format.isContainer else { return emitMessage(tail, start: start, end: end, text: text, meta: nil) }
        guard let part = LineParser.containerPart(text, as: format) else {
            flushJoin(tail)
            return emitMessage(tail, start: start, end: end, text: text, meta: nil)
        }
        let maxBytes = tail.rule.multilineMaxBytes
        var split = false
        if var join = tail.joining {
            if join.stream == part.stream && join.text.utf8.count + part.text.utf8.count <= maxBytes {
                join.text += part.text
                join.end = end
                join.at = Date()
                tail.joining = part.partial ? join : nil
                if !part.partial {
                    emitMessage(
                        tail, start: join.start, end: end, text: join.text,
                        meta: ContainerMeta(stream: join.stream, time: join.time, partial: join.split))
                }
                return
            }
            split = join.stream == part.stream  // too long: the rest is a part of the same message
            flushJoin(tail)
        }
        if part.partial && part.text.utf8.count < maxBytes {
            tail.joining = ContainerJoin(
                start: start, end: end, text: part.text, stream: part.stream, time: part.time, at: Date(), split: split)
            return
        }
        emitMessage(
            tail, start: start, end: end, text: part.text,
            meta: ContainerMeta(stream: part.stream, time: part.time, partial: split || part.partial))
        if part.partial {
            // A part longer than the bound on its own: what follows of its message is marked too.
            tail.joining = ContainerJoin(start: end, end: end, text: "", stream: part.stream, time: part.time, at: Date(), split: true)
        }
    }

    /// Sends the parts of a container message gathered so far as one
    /// message marked `partial` (its last part did not come in time, or
    /// cannot be joined to it).
    private func flushJoin(_ tail: Tail) {
        guard let join = tail.joining else { return }
        tail.joining = nil
        guard !join.text.isEmpty else { return }  // only the mark of a split message: no bytes
        emitMessage(
            tail, start: join.start, end: join.end, text: join.text,
            meta: ContainerMeta(stream: join.stream, time: join.time, partial: true))
    }

    /// A message of `tail` (a line, or a joined container message): into the
    /// batch, or into its multiline event.
    private func emitMessage(_ tail: Tail, start: Int, end: Int, text: String, meta: ContainerMeta?) {
        guard let multiline = tail.rule.multiline, !tail.isStandardInput else {
            batch.append(
                Line(
                    tail: tail.isStandardInput ? nil : tail, id: Self.lineId(tail.cursor.sourceId, start), source: tail.cursor.path,
                    offset: start, end: end, text: text, format: tail.rule.format, meta: meta))
            return
        }
        if var event = tail.event, multiline.continues(text), event.text.utf8.count + 1 + text.utf8.count <= tail.rule.multilineMaxBytes {
            event.text += "\n" + text
            event.end = end
            event.at = Date()
            tail.event = event
            return
        }
        flushEvent(tail)
        tail.event = (start, end, text, Date(), meta)
    }

    /// `<source id>:<offset>`, a line's `_id`, written into one allocation:
    /// string interpolation cost about 1,300 instructions a line.
    static func lineId(_ sourceId: String, _ offset: Int) -> String {
        var digits = 1
        var rest = offset / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let prefix = sourceId.utf8.count + 1
        return String(unsafeUninitializedCapacity: prefix + digits) { buffer in
            var index = buffer.initialize(from: sourceId.utf8).1
            buffer[index] = UInt8(ascii: ":")
            index = prefix + digits
            var value = max(0, offset)
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            } while index > prefix
            return prefix + digits
        }
    }

    /// Hands `tail`'s gathered event (if any) to the batch.
    private func flushEvent(_ tail: Tail) {
        guard let event = tail.event else { return }
        tail.event = nil
        batch.append(
            Line(
                tail: tail, id: Self.lineId(tail.cursor.sourceId, event.start), source: tail.cursor.path,
                offset: event.start, end: event.end, text: event.text, format: tail.rule.format, meta: event.meta))
    }

    /// Container messages and events whose last part or line came their
    /// timeout ago (or all) are complete.
    private func flushEvents(all: Bool) {
        let now = Date()
        for tail in tails {
            if let join = tail.joining, all || now.timeIntervalSince(join.at) >= tail.rule.multilineTimeout { flushJoin(tail) }
            if let event = tail.event, all || now.timeIntervalSince(event.at) >= tail.rule.multilineTimeout { flushEvent(tail) }
        }
    }

    /// The size of the file or content a tail reads.
    private func size(of tail: Tail) -> Int {
        if let content = tail.content { return content.count }
        var info = stat()
        if tail.fd >= 0 { return fstat(tail.fd, &info) == 0 ? Int(info.st_size) : 0 }
        return stat(tail.cursor.path, &info) == 0 && UInt64(info.st_ino) == tail.cursor.inode ? Int(info.st_size) : 0
    }

    /// The first `fingerprintBytes` bytes of what `tail` reads (fewer if it is shorter).
    private func prefix(of tail: Tail) -> [UInt8]? {
        if let content = tail.content { return Array(content.prefix(settings.fingerprintBytes)) }
        guard tail.fd >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: settings.fingerprintBytes)
        let n = pread(tail.fd, &bytes, bytes.count, 0)
        return n >= 0 ? Array(bytes.prefix(n)) : nil
    }

    /// Opens a closed tail's file again: at its path if that still names it,
    /// else wherever it was renamed to in the same directory.
    private func reopen(_ tail: Tail) -> Bool {
        if openIfSame(tail, at: tail.cursor.path) { return true }
        // The directory is listed only when the path names another file:
        // with thousands of files, listing it for every reopen dominated.
        let directory = (tail.cursor.path as NSString).deletingLastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        for name in names where openIfSame(tail, at: (directory.isEmpty ? "" : directory + "/") + name) { return true }
        return false
    }

    /// Opens `path` as `tail`'s file if it is that file: its device and
    /// inode, and its leading bytes (not another file on a reused inode).
    private func openIfSame(_ tail: Tail, at path: String) -> Bool {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        var info = stat()
        if fstat(fd, &info) == 0, UInt64(info.st_dev) == tail.cursor.device, UInt64(info.st_ino) == tail.cursor.inode {
            tail.fd = fd
            if prefixMatches(tail) {
                openFiles += 1
                return true
            }
            tail.fd = -1
        }
        close(fd)
        return false
    }

    /// Closes the open file idle longest, if it is still at its path (a
    /// rotated one stays open until it is finished). `true` if one was closed.
    private func closeIdle() -> Bool {
        let candidates = tails.filter { $0.fd >= 0 && $0.rotatedAt == nil && $0.readOffset >= size(of: $0) }
        guard let idle = candidates.min(by: { $0.lastActive < $1.lastActive }) else { return false }
        close(idle.fd)
        idle.fd = -1
        openFiles -= 1
        return true
    }

    /// At the end of every tail: a truncated or rewritten file starts a new
    /// generation; a file whose path names another file (or none) is
    /// finished once nothing more came for one more round.
    private func checkEnds() throws {
        for tail in tails where tail.content == nil && tail.fd >= 0 {
            var info = stat()
            guard fstat(tail.fd, &info) == 0 else { continue }
            let current = Int(info.st_size)
            if current < tail.readOffset || !prefixMatches(tail) {
                try restart(tail)
                continue
            }
            guard current <= tail.readOffset else { continue }
            var pathInfo = stat()
            if stat(tail.cursor.path, &pathInfo) != 0 || UInt64(pathInfo.st_ino) != tail.cursor.inode
                || UInt64(pathInfo.st_dev) != tail.cursor.device
            {
                if let since = tail.rotatedAt, Date().timeIntervalSince(since) >= 1 {
                    finish(tail)
                } else if tail.rotatedAt == nil {
                    tail.rotatedAt = Date()
                }
            }
        }
        tails.removeAll { $0.cursor.finished }
    }

    /// Whether the file still begins with the bytes its fingerprint was taken of.
    private func prefixMatches(_ tail: Tail) -> Bool {
        guard tail.cursor.fingerprintBytes > 0 else { return true }
        var bytes = [UInt8](repeating: 0, count: tail.cursor.fingerprintBytes)
        let n = pread(tail.fd, &bytes, bytes.count, 0)
        return n == bytes.count && Fingerprint.of(bytes) == tail.cursor.fingerprint
    }

    /// The file was truncated (or rewritten from its start): its committed
    /// lines stay, the old generation is forgotten, and the file is read
    /// again from its start as a new generation.
    private func restart(_ tail: Tail) throws {
        flushJoin(tail)
        flushEvent(tail)
        try commitBatch()
        if tail.isCommitted { cursorChanges.append((tail.cursor.cursorName, [])) }
        known[tail.cursor.sourceId] = nil
        var fresh = tail.cursor
        fresh.sourceId = ObjectId.generate().hex
        fresh.offset = 0
        fresh.lines = 0
        fresh.fingerprint = Fingerprint.of([UInt8]())
        fresh.fingerprintBytes = 0
        tail.cursor = fresh
        tail.isCommitted = false
        tail.readOffset = 0
        tail.partial.removeAll()
        tail.partialStart = 0
        try commitBatch()  // the forgotten cursor, with no line
    }

    /// The tail is read to its end and will not grow: its cursor is marked
    /// finished in the next commit and its file closed. (A last line without
    /// a newline in a finished file is forwarded too.)
    private func finish(_ tail: Tail) {
        if !tail.partial.isEmpty {
            emit(tail, start: tail.partialStart, end: tail.readOffset, text: Self.text(tail.partial))
            tail.partial.removeAll()
        }
        flushJoin(tail)
        flushEvent(tail)
        // The next commit sets the finished cursor: with the tail's last lines
        // if the batch holds some (it starts from `tail.cursor`), else alone.
        tail.cursor.finished = true
        if !batch.contains(where: { $0.tail === tail }) {
            cursorChanges.append((tail.cursor.cursorName, tail.cursor.encoded()))
            known[tail.cursor.sourceId] = tail.cursor
        }
        if tail.fd >= 0 {
            close(tail.fd)
            tail.fd = -1
            openFiles -= 1
        }
    }

    // MARK: - Finding files

    /// Looks for files the patterns name that no tail reads yet: each is
    /// matched to a known generation by inode and fingerprint, or by
    /// fingerprint alone (a copy, a `.gz`), else it is a new generation read
    /// from its start.
    private func scan(_ matchers: [PathPattern]) {
        var live: [[UInt64]: Tail] = [:]
        for tail in tails where tail.content == nil { live[[tail.cursor.device, tail.cursor.inode]] = tail }
        let reading = Set(tails.map(\.cursor.sourceId))
        let index = KnownIndex(known.values.filter { !reading.contains($0.sourceId) })
        var seenTails: Set<ObjectIdentifier> = []
        defer { settleUnseen(seenTails) }
        var directories: Set<String> = []
        defer { scannedDirectories = directories }
        for path in Set(matchers.flatMap { $0.expand(directories: &directories) }).sorted() {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let device = UInt64(info.st_dev)
            let inode = UInt64(info.st_ino)
            if let tail = live[[device, inode]] {
                guard tail.fd < 0 else { continue }  // an open file's inode cannot be reused
                // A closed tail's inode at this path: the same file, unless it is now
                // shorter or begins otherwise (deleted and its inode reused).
                if Int(info.st_size) >= tail.readOffset && startsLike(path, tail.cursor) {
                    if Int(info.st_size) > tail.readOffset { tail.ready = true }
                    seenTails.insert(ObjectIdentifier(tail))
                    continue
                }
                forget(tail)
                live[[device, inode]] = nil
            }
            if path.hasSuffix(".gz") {
                guard settings.gzip == .read else { continue }
                let key = [device, inode, UInt64(info.st_size)]
                guard !seenCompressed.contains(key) else { continue }
                seenCompressed.insert(key)
                addCompressed(path, device: device, inode: inode, index: index)
                continue
            }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var prefix = [UInt8](repeating: 0, count: settings.fingerprintBytes)
            let n = max(0, pread(fd, &prefix, prefix.count, 0))
            prefix = Array(prefix.prefix(n))
            let match = index.identify(
                device: device, inode: inode, prefix: prefix, size: Int(info.st_size), fullLength: settings.fingerprintBytes)
            if let match { index.remove(match) }
            if let match, match.finished && Int(info.st_size) <= match.offset {
                close(fd)  // a rotated file already read to its end
                continue
            }
            var cursor =
                match
                ?? FileCursor(
                    sourceId: ObjectId.generate().hex, path: path, device: device, inode: inode,
                    fingerprint: Fingerprint.of(prefix), fingerprintBytes: prefix.count,
                    offset: 0, lines: 0, finished: false)
            if let match, match.device != device || match.inode != inode {
                // The same content under another inode (a copy): read on from its offset.
                cursor.device = device
                cursor.inode = inode
            }
            cursor.path = path
            cursor.finished = false
            let tail = Tail(cursor: cursor, isCommitted: match != nil, rule: rule(for: path))
            if openFiles < settings.maxOpenFiles {
                tail.fd = fd
                openFiles += 1
            } else {
                close(fd)
            }
            tails.append(tail)
        }
    }

    /// The rule of the first source that names `path` (a rotated file: the
    /// one that named it before), else of the first source.
    private func rule(for path: String) -> SourceRule {
        sources.first { $0.patterns.contains { $0.matches(path) } } ?? sources.first ?? SourceRule(patterns: [])
    }

    /// Whether the file at `path` begins with the bytes `cursor`'s fingerprint was taken of.
    private func startsLike(_ path: String, _ cursor: FileCursor) -> Bool {
        guard cursor.fingerprintBytes > 0 else { return true }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: cursor.fingerprintBytes)
        return pread(fd, &bytes, bytes.count, 0) == bytes.count && Fingerprint.of(bytes) == cursor.fingerprint
    }

    /// A tail whose file is gone (its inode reused by another): its cursor is
    /// removed with the next commit and it is no longer read.
    private func forget(_ tail: Tail) {
        if tail.isCommitted { cursorChanges.append((tail.cursor.cursorName, [])) }
        known[tail.cursor.sourceId] = nil
        if tail.fd >= 0 {
            close(tail.fd)
            openFiles -= 1
        }
        tails.removeAll { $0 === tail }
    }

    /// Closed tails the scan did not find at their path: renamed (reopened
    /// wherever their inode is now in the directory, read to their end and
    /// finished) or deleted (finished as they are).
    private func settleUnseen(_ seen: Set<ObjectIdentifier>) {
        for tail in tails where tail.fd < 0 && tail.content == nil && !seen.contains(ObjectIdentifier(tail)) {
            var info = stat()
            if stat(tail.cursor.path, &info) == 0 && UInt64(info.st_ino) == tail.cursor.inode && UInt64(info.st_dev) == tail.cursor.device {
                continue  // still there (the patterns no longer match it: it is read on)
            }
            if reopen(tail) {
                tail.rotatedAt = Date.distantPast
            } else {
                finish(tail)
            }
        }
        tails.removeAll { $0.cursor.finished }
    }

    /// A `.gz` file (read mode): decompressed whole, matched by fingerprint.
    /// `anyLength`: a fingerprint of fewer bytes than `--fingerprint-bytes`
    /// matches too (when looking for one generation in its own directory).
    private func addCompressed(_ path: String, device: UInt64, inode: UInt64, index: KnownIndex, anyLength: Bool = false) {
        guard let data = FileManager.default.contents(atPath: path),
            let content = try? Gzip.decompress([UInt8](data), limits: GzipLimits(maxOutputBytes: 1 << 30, maxRatio: 1_000))
        else {
            if !settings.quiet {
                FileHandle.standardError.write(Data("ingest-forward: \(path) is not a readable gzip file; skipped\n".utf8))
            }
            return
        }
        let prefix = Array(content.prefix(settings.fingerprintBytes))
        let match = index.identify(
            device: device, inode: inode, prefix: prefix, size: content.count,
            fullLength: settings.fingerprintBytes, anyLength: anyLength)
        if let match { index.remove(match) }
        if let match, match.finished || content.count <= match.offset { return }
        var cursor =
            match
            ?? FileCursor(
                sourceId: ObjectId.generate().hex, path: path, device: device, inode: inode,
                fingerprint: Fingerprint.of(prefix), fingerprintBytes: prefix.count,
                offset: 0, lines: 0, finished: false)
        cursor.path = path
        cursor.device = device
        cursor.inode = inode
        let tail = Tail(cursor: cursor, isCommitted: match != nil, rule: rule(for: match?.path ?? path))
        tail.content = content
        tails.append(tail)
    }

    /// Generations with a cursor that is not finished but that no pattern
    /// found (rotated while the forwarder was stopped, to a name the patterns
    /// do not match): looked for in their directory by inode and
    /// fingerprint, or as a `.gz` there; read on from their offset and then
    /// finished. A generation whose file is gone is reported and forgotten.
    private func resumeOrphans() {
        let live = Set(tails.map(\.cursor.sourceId))
        for cursor in known.values.sorted(by: { $0.sourceId < $1.sourceId }) where !cursor.finished && !live.contains(cursor.sourceId) {
            let directory = (cursor.path as NSString).deletingLastPathComponent
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
            var found = false
            for name in names.sorted() {
                let path = (directory.isEmpty ? "" : directory + "/") + name
                var info = stat()
                guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                if name.hasSuffix(".gz") {
                    guard settings.gzip == .read else { continue }
                    let before = tails.count
                    addCompressed(
                        path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), index: KnownIndex([cursor]), anyLength: true)
                    if tails.count > before, tails.last!.cursor.sourceId == cursor.sourceId {
                        found = true
                        break
                    }
                    if tails.count > before { tails.removeLast() }
                    continue
                }
                guard UInt64(info.st_dev) == cursor.device, UInt64(info.st_ino) == cursor.inode else { continue }
                var tailCursor = cursor
                tailCursor.path = path
                let tail = Tail(cursor: tailCursor, isCommitted: true, rule: rule(for: cursor.path))
                if reopen(tail), prefixMatches(tail), size(of: tail) >= cursor.offset {
                    tail.rotatedAt = Date.distantPast  // no longer at its path: finished at its end
                    tails.append(tail)
                    found = true
                    break
                }
                if tail.fd >= 0 { close(tail.fd); openFiles -= 1 }
            }
            if !found {
                if !settings.quiet {
                    FileHandle.standardError.write(
                        Data(
                            "ingest-forward: \(cursor.path) (\(cursor.lines) lines forwarded, up to byte \(cursor.offset)) is gone; anything written to it after that was not forwarded\n"
                                .utf8))
                }
                cursorChanges.append((cursor.cursorName, []))
                known[cursor.sourceId] = nil
            }
        }
    }

    /// Finished generations whose file no longer exists in their directory
    /// (by inode, or a `.gz` with their content) are forgotten: their cursor
    /// is removed with the next commit, which keeps the store's cursors
    /// bounded by the files that exist.
    private func forgetVanished(_ matchers: [PathPattern]) {
        let finished = known.values.filter(\.finished)
        guard !finished.isEmpty else { return }
        var inodes: Set<[UInt64]> = []
        var directories: Set<String> = []
        for cursor in finished { directories.insert((cursor.path as NSString).deletingLastPathComponent) }
        for directory in directories {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? [] {
                var info = stat()
                if stat((directory.isEmpty ? "" : directory + "/") + name, &info) == 0 {
                    inodes.insert([UInt64(info.st_dev), UInt64(info.st_ino)])
                }
            }
        }
        for cursor in finished where !inodes.contains([cursor.device, cursor.inode]) {
            cursorChanges.append((cursor.cursorName, []))
            known[cursor.sourceId] = nil
        }
    }

    /// Known generations that no tail reads, by inode and by fingerprint, for
    /// matching the files of one scan (a generation matches one file at most).
    final class KnownIndex {
        private var byInode: [[UInt64]: [FileCursor]] = [:]
        private var byFingerprint: [String: [FileCursor]] = [:]
        private var taken: Set<String> = []

        init(_ cursors: [FileCursor]) {
            for cursor in cursors {
                byInode[[cursor.device, cursor.inode], default: []].append(cursor)
                byFingerprint[cursor.fingerprint, default: []].append(cursor)
            }
        }

        func remove(_ cursor: FileCursor) { taken.insert(cursor.sourceId) }

        /// The generation the file `device`/`inode`, whose content starts with
        /// `prefix` and has `size` bytes, continues: the same inode with the same
        /// leading bytes (the furthest one), else the same full-length
        /// fingerprint (a copy or a decompressed `.gz`). Not one whose file is
        /// now shorter than what was read (truncated: a new generation).
        func identify(device: UInt64, inode: UInt64, prefix: [UInt8], size: Int, fullLength: Int, anyLength: Bool = false) -> FileCursor? {
            func same(_ cursor: FileCursor) -> Bool {
                !taken.contains(cursor.sourceId) && size >= cursor.offset && prefix.count >= cursor.fingerprintBytes
                    && Fingerprint.of(prefix.prefix(cursor.fingerprintBytes)) == cursor.fingerprint
            }
            if let match = (byInode[[device, inode]] ?? []).filter(same).max(by: { $0.offset < $1.offset }) { return match }
            if anyLength { return byFingerprint.values.joined().first(where: same) }
            guard prefix.count >= fullLength else { return nil }
            return (byFingerprint[Fingerprint.of(prefix.prefix(fullLength))] ?? [])
                .first { $0.fingerprintBytes == fullLength && same($0) }
        }
    }

    // MARK: - Progress, metrics and summary

    /// Updates the forwarder's gauges and writes the metrics file (once a
    /// second at most unless `force`).
    func reportMetrics(force: Bool = false) {
        guard let metricsFile, force || Date().timeIntervalSince(lastMetrics) >= 1 else { return }
        lastMetrics = Date()
        pausedGauge?.record(Int64(blockedSince == nil ? 0 : 1))
        filesGauge?.record(Int64(tails.count))
        metricsFile.write()
    }

    private func progress(force: Bool = false) {
        guard showProgress, force || Date().timeIntervalSince(lastProgress) >= 0.5 else { return }
        lastProgress = Date()
        let elapsed = max(0.001, Date().timeIntervalSince(start))
        let counters = session.storeCounters
        var line = String(
            format: "\rlines %d (%.0f/s)  files %d  pending %d  uploaded %d ", committedLines, Double(committedLines) / elapsed,
            tails.count, counters?.pendingObjects ?? 0, (counters?.acknowledgedObjects ?? 0) - acknowledgedAtStart)
        if blockedSince != nil { line += " STORE FULL: reading paused " }
        FileHandle.standardError.write(Data(line.utf8))
        progressShown = true
    }

    /// Ends the progress line (a newline) if one was shown.
    func endProgress() {
        if progressShown { FileHandle.standardError.write(Data("\n".utf8)) }
        progressShown = false
    }

    func printSummary() {
        let elapsed = max(0.001, Date().timeIntervalSince(start))
        let counters = session.storeCounters
        var text = String(
            format: "forwarded %d lines in %d transactions in %.1f s (%.0f lines/s); uploaded %d, pending %d",
            committedLines, transactions, elapsed, Double(committedLines) / elapsed,
            (counters?.acknowledgedObjects ?? 0) - acknowledgedAtStart, counters?.pendingObjects ?? 0)
        text += "; files \(tails.count) open, \(known.count) known"
        let blocked = blockedSeconds + (blockedSince.map { Date().timeIntervalSince($0) } ?? 0)
        if blocked > 0 { text += String(format: "; paused %d times, %.1f s in all, by a full store", blockedTimes, blocked) }
        if sources.isEmpty || settings.once {
            // standard input, or --once: nothing watched
        } else if let reason = watcher.pollReason {
            text += "; polling (\(reason))"
        } else {
            text += "; inotify woke \(wakes) of \(waits) waits"
        }
        print(text)
    }
}
