// The soak mode of sync-client-child (see SoakTests in DataIngestTests):
//
//   sync-client-child soak <first-seq> <full|interval>
//
// Commits numbered SoakReading transactions of 1 to 20 objects without end,
// and reports each one on standard output the moment `write {}` returns:
//
//   ready                          the user is logged in (or restored) and the realm is open
//   ok <tx> <n>                    committed: seqs tx..<tx+n (tx is the first seq of the transaction)
//   fail <tx> <n> <errno> <error>  the commit threw: that transaction must never reach the database
//   full <limit> / space           a disk-full episode began / ended (answers to the commands below)
//   syncerror <code> <message>     what the session reported to the app's error handler
//   storeerror <errno> <message>   a new background error of the store (sealing, interval sync)
//   token-refreshed                the session refreshed the access token
//   uploaded <pending> <quarantined> <committed> <failed>   after "stop": everything was acknowledged
//   drain-failed <error>
//
// Standard output is a pipe, so a line is in the kernel (and reaches the test)
// as soon as write(2) returns, even if the process is killed right after; and
// a pipe is not a file, so the lowered file-size limit does not affect it.
//
// Commands, one per line on standard input:
//
//   full <bytes>   lower the soft RLIMIT_FSIZE to <bytes>: with SIGXFSZ ignored,
//                  every write past that size fails with EFBIG (a real kernel
//                  error on the store's real files: active segments, sealing,
//                  the segment sequence, the user's token file)
//   space          raise the soft limit back to the hard limit
//   stop           stop committing, wait for every segment to be acknowledged, report "uploaded"
//
// End of standard input (the test process died) ends the child.
import DataIngest
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport

/// A numbered reading of the soak test: `seq` is unique across every run of
/// the child, `tx` is the first seq of its transaction and `n` its size, so
/// the database shows whether a transaction arrived whole.
final class SoakReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var seq: Int
    @Persisted var tx: Int
    @Persisted var n: Int
    @Persisted var payload: String
}

/// One line to standard output with a single write(2): lines shorter than
/// PIPE_BUF arrive whole even when the process is killed.
func soakSay(_ line: String) {
    var bytes = Array(line.prefix(3_000).utf8)
    bytes.append(10)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { exit(4) }
    }
}

/// The soft file-size limit: `nil` raises it back to the hard limit.
func setFileSizeLimit(_ bytes: UInt64?) -> Bool {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0 else { return false }
    limit.rlim_cur = bytes.map { rlim_t($0) } ?? limit.rlim_max
    return setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0
}

/// The next line of standard input (without its newline), nil at its end.
func readCommandLine() -> String? {
    var line: [UInt8] = []
    var byte: UInt8 = 0
    // Commands are short: a longer line is cut into pieces.
    for _ in 0..<4_096 {
        let n = read(0, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
        if byte == 10 { return String(decoding: line, as: UTF8.self) }
        line.append(byte)
    }
    return String(decoding: line, as: UTF8.self)
}

/// The errno inside a commit error, if the store reported one.
func soakErrno(_ error: any Error) -> Int32 {
    if let realm = error as? RealmError, let underlying = realm.underlyingError { return soakErrno(underlying) }
    if let store = error as? SegmentStoreError { return store.errno ?? 0 }
    return 0
}

/// Runs the soak mode; returns the exit code.
func runSoak(appId: String, firstSeq: Int, durability: String) async -> Int32 {
    // With SIGXFSZ ignored, a write past RLIMIT_FSIZE fails with EFBIG instead of killing the process.
    signal(SIGXFSZ, SIG_IGN)
    var configuration = App.Configuration(
        metadataDirectory: FileManager.default.currentDirectoryPath + "/soak-metadata")
    configuration.sync.initialBackoff = 0.05
    configuration.sync.maximumBackoff = 1
    // Many small segments, so kills land while sealing and uploading too.
    configuration.segmentStore.maxSegmentBytes = 32 << 10
    configuration.segmentStore.maxSegmentAgeMilliseconds = 200
    configuration.segmentStore.durability = durability == "full" ? .full : .interval(milliseconds: 50)
    let app = App(id: appId, configuration: configuration)
    app.syncManager.errorHandler = { error, _ in
        soakSay("syncerror \(error.code.rawValue) \(error.message.replacingOccurrences(of: "\n", with: " "))")
    }
    let user: User
    do {
        if let restored = app.currentUser {
            user = restored
        } else {
            user = try await app.login(credentials: .anonymous)
        }
    } catch {
        soakSay("login-failed \(error)")
        return 1
    }
    let realm: Realm
    do {
        var realmConfiguration = user.flexibleSyncConfiguration()
        realmConfiguration.objectTypes = [SoakReading.self]
        realm = try await Realm(configuration: realmConfiguration)
    } catch {
        soakSay("open-failed \(error)")
        return 1
    }
    // The same store the session uses (one instance per directory in a
    // process, same configuration), opened to watch its background errors.
    var storeConfiguration = configuration.segmentStore
    storeConfiguration.directory = user.session.storeDirectory
    guard let store = try? SegmentStore.open(storeConfiguration) else {
        soakSay("open-failed the segment store")
        return 1
    }
    soakSay("ready")
    // Reports each new background error of the store (sealing, interval sync)
    // and each refreshed access token (the test's server issues 60 s tokens).
    let watcher = Thread {
        var lastError: String?
        var lastToken = user.accessToken
        for _ in 0..<100_000_000 {
            let error = store.backgroundError
            let text = error.map { "\($0.errno ?? 0) \($0.message)" }
            if let error, text != lastError {
                soakSay("storeerror \(error.errno ?? 0) \(error.message.replacingOccurrences(of: "\n", with: " "))")
            }
            lastError = text
            let token = user.accessToken
            if token != lastToken { soakSay("token-refreshed") }
            lastToken = token
            usleep(20_000)
        }
    }
    watcher.start()

    let stopping = LockedBox(false)
    let control = Thread {
        // read(2), not readLine(): getline would hold stdin's FILE lock while
        // blocked, and the fflush(nil) before exit would wait for it forever.
        for _ in 0..<100_000_000 {
            guard let line = readCommandLine() else { break }
            let words = line.split(separator: " ")
            switch words.first {
            case "full":
                let bytes = UInt64(words.dropFirst().first ?? "") ?? 0
                soakSay(setFileSizeLimit(bytes) ? "full \(bytes)" : "setrlimit-failed \(errno)")
            case "space":
                soakSay(setFileSizeLimit(nil) ? "space" : "setrlimit-failed \(errno)")
            case "stop":
                stopping.withLock { $0 = true }
            default:
                soakSay("unknown-command \(line)")
            }
        }
        // The test is gone: do not outlive it.
        exit(3)
    }
    control.start()

    var generator = SystemRandomNumberGenerator()
    var seq = firstSeq
    var committed = 0
    var failed = 0
    // Bounded by count (the test stops the child long before).
    for _ in 0..<100_000_000 {
        if stopping.withLock({ $0 }) { break }
        let count = Int.random(in: 1...20, using: &generator)
        let tx = seq
        do {
            try realm.write {
                for k in 0..<count {
                    realm.create(
                        SoakReading.self,
                        value: [
                            "_id": ObjectId.generate(), "seq": tx + k, "tx": tx, "n": count,
                            "payload": "soak reading \(tx + k) of transaction \(tx)",
                        ])
                }
            }
            committed += count
            soakSay("ok \(tx) \(count)")
        } catch {
            failed += count
            let description = "\(error)".replacingOccurrences(of: "\n", with: " ")
            soakSay("fail \(tx) \(count) \(soakErrno(error)) \(description)")
            // A full disk fails fast: do not spin.
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        seq += count
        try? await Task.sleep(nanoseconds: UInt64.random(in: 1_000_000...8_000_000, using: &generator))
    }
    do {
        try await user.session.wait(for: .upload, timeout: 300)
        let counters = user.session.storeCounters
        let quarantined = (try? user.session.quarantine().objects().count) ?? -1
        soakSay("uploaded \(counters?.pendingObjects ?? -1) \(quarantined) \(committed) \(failed)")
        return 0
    } catch {
        soakSay("drain-failed \("\(error)".replacingOccurrences(of: "\n", with: " "))")
        return 1
    }
}
