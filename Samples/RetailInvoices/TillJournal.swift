#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A till's own durable state, `<data dir>/tills/<store>-<till>.json`: the
/// last invoice it issued (in full) and its running count and total.
///
/// The protocol that keeps the chain from forking (README, "Crashes"):
/// invoice N is written here, durably, *before* it is committed to the
/// segment store, and a till that starts records its journaled invoice
/// again before issuing a new one. So invoice N is fixed, byte for byte,
/// before any copy of it can exist, every copy of it is the same, and the
/// server keeps one (its `_id` is the primary key): a `kill -9` between any
/// two steps can neither skip nor repeat a number nor give two invoices
/// the same number.
struct TillJournal: Codable, Equatable {
    var store: String
    var till: String
    /// Invoices issued so far: the last one's number.
    var issued = 0
    /// The sum of their totals, in cents.
    var totalCents = 0
    /// The last invoice issued; nil before the first.
    var last: InvoiceRecord?

    /// The number and previous hash of the till's next invoice.
    var next: (number: Int, previousHash: String) {
        (issued + 1, last?.hash ?? InvoiceRecord.genesisHash)
    }

    /// This journal after issuing `invoice` (which must be ``next``).
    func issuing(_ invoice: InvoiceRecord) -> TillJournal {
        var journal = self
        journal.issued = invoice.number
        journal.totalCents += invoice.totalCents
        journal.last = invoice
        return journal
    }

    static func directory(_ dataDirectory: String) -> String { dataDirectory + "/tills" }

    static func path(_ dataDirectory: String, store: String, till: String) -> String {
        directory(dataDirectory) + "/\(store)-\(till).json"
    }

    /// The journal of `till` in `store`, or a new (empty) one.
    static func load(_ dataDirectory: String, store: String, till: String) throws -> TillJournal {
        let path = path(dataDirectory, store: store, till: till)
        guard FileManager.default.fileExists(atPath: path) else { return TillJournal(store: store, till: till) }
        return try decode(path)
    }

    /// Every journal in `dataDirectory`, sorted by store and till.
    static func loadAll(_ dataDirectory: String) throws -> [TillJournal] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory(dataDirectory))) ?? []
        return try names.filter { $0.hasSuffix(".json") }.sorted()
            .map { try decode(directory(dataDirectory) + "/" + $0) }
            .sorted { ($0.store, $0.till) < ($1.store, $1.till) }
    }

    private static func decode(_ path: String) throws -> TillJournal {
        do {
            return try JSONDecoder().decode(TillJournal.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw RetailError("cannot read the till journal \(path): \(error); it is the till's own record, restore it from a backup")
        }
    }

    /// Writes the journal durably: a temporary file, `fsync`, `rename` over
    /// the old one, `fsync` of the directory. A crash at any point leaves
    /// the old journal or the new one, never a mix.
    func save(_ dataDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = Self.path(dataDirectory, store: store, till: till)
        try DurableFile.write(Array(try encoder.encode(self)), to: path) {
            CrashPoint.reached(.journalSynced)
        }
    }
}

/// One `run` at a time per data directory: two would issue the same
/// numbers with different contents, forking the chains. An exclusive
/// `flock` on `tills/.lock`, held until the process exits (the kernel
/// releases it on any exit, `kill -9` included).
enum TillLock {
    static func acquire(_ dataDirectory: String) throws {
        let path = TillJournal.directory(dataDirectory) + "/.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RetailError.posix("open", path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw RetailError("another RetailInvoices run is using \(dataDirectory) (it holds \(path)); wait for it to finish")
        }
        // Kept open on purpose: the lock lives as long as the process.
    }
}

/// Atomic, durable replacement of small files.
enum DurableFile {
    /// `bytes` to `path` through `path.tmp`; `beforeRename` runs once the
    /// temporary file is synced.
    static func write(_ bytes: [UInt8], to path: String, beforeRename: () -> Void = {}) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RetailError.posix("open", temporary) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = RetailError.posix("write", temporary)
                close(fd)
                throw error
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            let error = RetailError.posix("fsync", temporary)
            close(fd)
            throw error
        }
        close(fd)
        beforeRename()
        guard rename(temporary, path) == 0 else { throw RetailError.posix("rename", path) }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw RetailError.posix("open", directory) }
        defer { close(directoryFD) }
        guard fsync(directoryFD) == 0 else { throw RetailError.posix("fsync", directory) }
    }
}

/// The crash tests' seam: `RETAILINVOICES_CRASH_AT=<step>:<n>` makes the
/// process `kill -9` itself at `step` of the n-th invoice it issues (1-based,
/// counting every till; a recovery re-record does not count). Steps, in
/// the order a till goes through them: `journal-synced` (the new journal
/// is in its temporary file, synced, not renamed), `journaled` (renamed
/// and the directory synced, the invoice not committed), `committed` (the
/// segment store commit returned).
enum CrashPoint: String {
    case journalSynced = "journal-synced"
    case journaled
    case committed

    nonisolated(unsafe) private static var issued = 0
    private static let target: (CrashPoint, Int)? = {
        guard let value = ProcessInfo.processInfo.environment["RETAILINVOICES_CRASH_AT"] else { return nil }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let step = CrashPoint(rawValue: String(parts[0])), let n = Int(parts[1]) else { return nil }
        return (step, n)
    }()

    /// Counts one more issued invoice (called before its journal is written).
    static func issuing() { issued += 1 }

    /// `kill -9` of this process if `step` of the current invoice is the target.
    static func reached(_ step: CrashPoint) {
        guard let (targetStep, n) = target, targetStep == step, n == issued else { return }
        fflush(nil)
        kill(getpid(), SIGKILL)
    }
}

/// The sample's errors: what happened and what to do.
struct RetailError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }

    static func posix(_ call: String, _ path: String) -> RetailError {
        RetailError(
            "\(call) \(path) failed: \(String(cString: strerror(errno))) (errno \(errno)); check the data directory's permissions and free space"
        )
    }
}
