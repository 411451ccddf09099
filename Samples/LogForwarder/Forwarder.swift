#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation

/// Reads lines, commits them in batches to the synced realm and keeps the
/// checkpoint. Confined to the main actor, like the realm it writes.
@MainActor
final class Forwarder {
    private let realm: Realm
    private let session: SyncSession
    private let format: LineFormat
    private let batchLines: Int
    private let checkpointFile: String
    private let quiet: Bool
    private let shouldStop: () -> Bool
    private let host: String
    private let showProgress: Bool

    private struct Line {
        var id: String
        var offset: Int
        var text: String
    }

    private var batch: [Line] = []
    private var source = "-"
    private var committedLines = 0
    private var transactions = 0
    private let start = Date()
    private var lastProgress = Date.distantPast
    private var progressShown = false
    private let acknowledgedAtStart: Int

    // The file being followed.
    private var fd: Int32 = -1
    private var checkpoint: Checkpoint?
    private var partial: [UInt8] = []   // bytes of an incomplete line
    private var partialStart = 0        // file offset of partial's first byte
    private var completeEnd = 0         // file offset after the last complete line read

    init(realm: Realm, session: SyncSession, format: LineFormat, batchLines: Int, checkpointFile: String,
         quiet: Bool, shouldStop: @escaping () -> Bool) {
        self.realm = realm
        self.session = session
        self.format = format
        self.batchLines = batchLines
        self.checkpointFile = checkpointFile
        self.quiet = quiet
        self.shouldStop = shouldStop
        var name = [CChar](repeating: 0, count: 256)
        host = gethostname(&name, 255) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        showProgress = !quiet && isatty(STDERR_FILENO) == 1
        acknowledgedAtStart = session.storeCounters?.acknowledgedObjects ?? 0
    }

    // MARK: - Committing

    /// Commits the batch and then saves `checkpoint` (if any).
    private func commit() throws {
        if !batch.isEmpty {
            let received = Date()
            try realm.write {
                for line in batch {
                    let parsed = LineParser.parse(line.text, as: format)
                    var value: [String: Any] = [
                        "_id": line.id, "source": source, "offset": line.offset, "host": host, "receivedAt": received,
                        "format": parsed.format, "message": parsed.message, "fields": parsed.fields,
                    ]
                    if let timestamp = parsed.timestamp { value["timestamp"] = timestamp }
                    if let level = parsed.level { value["level"] = level }
                    realm.create(ForwardedLine.self, value: value)
                }
            }
            committedLines += batch.count
            transactions += 1
            batch.removeAll(keepingCapacity: true)
            // Test seam: die in the window between a commit and its checkpoint.
            if transactions == Self.killAfterCommit { kill(getpid(), SIGKILL) }
        }
        if let checkpoint { try checkpoint.save(checkpointFile) }
        progress()
    }

    /// `INGEST_FORWARD_TEST_KILL_AFTER_COMMIT=N`: the process kills itself
    /// with SIGKILL right after its Nth commit, before that commit's
    /// checkpoint is saved (the crash window the tests exercise). Unset: never.
    private static let killAfterCommit: Int? =
        ProcessInfo.processInfo.environment["INGEST_FORWARD_TEST_KILL_AFTER_COMMIT"].flatMap { Int($0) }

    // MARK: - Standard input

    func forwardStandardInput() throws {
        source = "-"
        let run = ObjectId.generate().hex
        var offset = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        partial.removeAll()
        partialStart = 0
        while !shouldStop() {
            let n = read(STDIN_FILENO, &buffer, buffer.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw ForwardError("reading standard input failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            split(buffer[0..<n], at: offset) { start in "stdin-\(run):\(start)" }
            offset += n
            if batch.count >= batchLines { try commit() }
        }
        if !partial.isEmpty {
            batch.append(Line(id: "stdin-\(run):\(partialStart)", offset: partialStart, text: Self.text(partial)))
            partial.removeAll()
        }
        try commit()
    }

    /// Appends the complete lines of `chunk` (which starts at file offset
    /// `offset`) to the batch; keeps an incomplete last line in `partial`.
    private func split(_ chunk: ArraySlice<UInt8>, at offset: Int, id: (Int) -> String) {
        var lineStart = chunk.startIndex
        for index in chunk.indices where chunk[index] == 10 {
            let start: Int
            let text: String
            if partial.isEmpty {
                start = offset + (lineStart - chunk.startIndex)
                text = Self.text(chunk[lineStart..<index])
            } else {
                start = partialStart
                partial.append(contentsOf: chunk[lineStart..<index])
                text = Self.text(partial[...])
                partial.removeAll(keepingCapacity: true)
            }
            batch.append(Line(id: id(start), offset: start, text: text))
            lineStart = index + 1
            completeEnd = offset + (lineStart - chunk.startIndex)
        }
        if lineStart < chunk.endIndex {
            if partial.isEmpty { partialStart = offset + (lineStart - chunk.startIndex) }
            partial.append(contentsOf: chunk[lineStart...])
        }
    }

    private static func text(_ bytes: some Collection<UInt8>) -> String {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    // MARK: - Following a file

    /// Follows `path` like `tail -F` until stopped (or its end, with `once`).
    func follow(path: String, once: Bool) throws {
        source = path
        let saved = Checkpoint.load(checkpointFile).flatMap { $0.path == path ? $0 : nil }
        guard try open(path, resume: saved) else {
            if once { throw ForwardError("cannot open \(path): no such file") }
            return try waitForFile(path, once: once)
        }
        try readLoop(path, once: once)
    }

    private func waitForFile(_ path: String, once: Bool) throws {
        while !shouldStop() {
            if try open(path, resume: nil) { return try readLoop(path, once: once) }
            usleep(200_000)
        }
    }

    /// Opens `path`; resumes at the checkpoint if it names this very file
    /// and the file is not shorter, else starts a new generation at 0 (its
    /// checkpoint saved before any of its lines is committed). False if the
    /// file does not exist.
    private func open(_ path: String, resume: Checkpoint?) throws -> Bool {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return false }
            throw ForwardError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        fstat(descriptor, &info)
        fd = descriptor
        partial.removeAll()
        if let resume, resume.device == UInt64(info.st_dev), resume.inode == UInt64(info.st_ino), Int(info.st_size) >= resume.offset {
            lseek(descriptor, off_t(resume.offset), SEEK_SET)
            checkpoint = resume
            partialStart = resume.offset
            completeEnd = resume.offset
            return true
        }
        let fresh = Checkpoint(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                               sourceId: ObjectId.generate().hex, offset: 0, lines: 0)
        try fresh.save(checkpointFile)
        checkpoint = fresh
        partialStart = 0
        completeEnd = 0
        return true
    }

    private func readLoop(_ path: String, once: Bool) throws {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var readOffset = checkpoint?.offset ?? 0
        while true {
            if shouldStop() { return try commitBatch() }
            guard var current = checkpoint else { return }
            let n = read(fd, &buffer, buffer.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw ForwardError("reading \(path) failed: \(String(cString: strerror(errno)))")
            }
            if n > 0 {
                let sourceId = current.sourceId
                split(buffer[0..<n], at: readOffset) { "\(sourceId):\($0)" }
                readOffset += n
                if batch.count >= batchLines { try commitBatch() }
                continue
            }
            // At the end of the file: commit what was read.
            try commitBatch()
            if once { return }
            // Rotated (the path names another file, or none)? The old file is
            // read to its end; continue with the new one.
            var pathInfo = stat()
            if stat(path, &pathInfo) != 0 || UInt64(pathInfo.st_ino) != current.inode || UInt64(pathInfo.st_dev) != current.device {
                close(fd)
                fd = -1
                checkpoint = nil
                while !shouldStop() {
                    if try open(path, resume: nil) { break }
                    usleep(100_000)
                }
                if checkpoint == nil { return }
                readOffset = 0
                continue
            }
            // Truncated (shorter than what was read)? Read again from the start, as a new generation.
            var fdInfo = stat()
            fstat(fd, &fdInfo)
            if Int(fdInfo.st_size) < readOffset {
                current = Checkpoint(path: path, device: current.device, inode: current.inode,
                                     sourceId: ObjectId.generate().hex, offset: 0, lines: 0)
                try current.save(checkpointFile)
                checkpoint = current
                partial.removeAll()
                partialStart = 0
                completeEnd = 0
                readOffset = 0
                lseek(fd, 0, SEEK_SET)
                continue
            }
            progress()
            usleep(100_000)
        }
    }

    /// Commits the batch in transactions of at most `batchLines` lines,
    /// saving the checkpoint after each (at the end of its last line).
    private func commitBatch() throws {
        guard var current = checkpoint, !batch.isEmpty else { return }
        let all = batch
        var start = 0
        while start < all.count {
            let end = min(all.count, start + batchLines)
            batch = Array(all[start..<end])
            current.offset = end < all.count ? all[end].offset : completeEnd
            current.lines += end - start
            checkpoint = current
            try commit()
            start = end
        }
        batch.removeAll(keepingCapacity: true)
    }

    // MARK: - Progress and summary

    private func progress() {
        guard showProgress, Date().timeIntervalSince(lastProgress) >= 0.5 else { return }
        lastProgress = Date()
        let elapsed = max(0.001, Date().timeIntervalSince(start))
        let counters = session.storeCounters
        let line = String(format: "\rlines %d (%.0f/s)  pending %d  uploaded %d ", committedLines, Double(committedLines) / elapsed,
                          counters?.pendingObjects ?? 0, (counters?.acknowledgedObjects ?? 0) - acknowledgedAtStart)
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
        var text = String(format: "forwarded %d lines in %d transactions in %.1f s (%.0f lines/s); uploaded %d, pending %d",
                          committedLines, transactions, elapsed, Double(committedLines) / elapsed,
                          (counters?.acknowledgedObjects ?? 0) - acknowledgedAtStart, counters?.pendingObjects ?? 0)
        if let checkpoint { text += "; checkpoint \(checkpoint.path) offset \(checkpoint.offset)" }
        print(text)
    }
}
