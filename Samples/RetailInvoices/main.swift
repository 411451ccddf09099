// RetailInvoices: a retail service recording invoices with IngestRecorder.
//
//   RetailInvoices run    --app-id ID [--base-url URL] [--stores N] [--tills N] [--checkouts N]
//                         [--retry-every K] [--data-dir DIR]
//   RetailInvoices verify --database PATH [--data-dir DIR]
#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation

let usage = """
    usage: RetailInvoices run --app-id ID [--base-url URL] [--stores N] [--tills N] [--checkouts N]
                              [--retry-every K] [--data-dir DIR] [--upload-timeout S]
           RetailInvoices verify --database PATH [--data-dir DIR]

    run      simulated checkouts: each invoice (Decimal128 amounts, embedded lines, _id from
             store, till and invoice number) is recorded with IngestRecorder, which returns once
             it is committed with full durability; every K-th invoice is recorded a second time,
             as a retry would (the server keeps one). Waits for the upload, then adds the
             per-store totals to the ledger in DIR (default ./retail-data).
    verify   compares the ledger's per-store counts and totals with the server's SQLite database
             (<server data dir>/<app id>.sqlite): they must match to the cent.

    defaults: --stores 3 --tills 2 --checkouts 50 (per till) --retry-every 10 --upload-timeout 60
    environment: DATAINGEST_APP_ID, DATAINGEST_BASE_URL
    exit status: 0 success (verify: totals match), 1 failure or mismatch, 2 usage error
    """

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("RetailInvoices: \(message)\n".utf8))
    exit(status)
}

func say(_ line: String) {
    print(line)
    fflush(nil)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("no command\n\n\(usage)", 2) }
if command == "-h" || command == "--help" {
    print(usage)
    exit(0)
}
arguments.removeFirst()
var flags: [String: String] = [:]
var index = 0
while index < arguments.count {
    let flag = arguments[index]
    if flag == "-h" || flag == "--help" {
        print(usage)
        exit(0)
    }
    guard flag.hasPrefix("--"), index + 1 < arguments.count else { fail("unexpected argument '\(flag)'\n\n\(usage)", 2) }
    flags[String(flag.dropFirst(2))] = arguments[index + 1]
    index += 2
}
@MainActor
func number(_ name: String, _ defaultValue: Int) -> Int {
    guard let text = flags[name] else { return defaultValue }
    guard let value = Int(text), value > 0 else { fail("--\(name) needs a positive whole number, not '\(text)'", 2) }
    return value
}
let environment = ProcessInfo.processInfo.environment
let dataDirectory = flags["data-dir"] ?? FileManager.default.currentDirectoryPath + "/retail-data"
let ledgerPath = dataDirectory + "/ledger.json"

switch command {
case "run":
    let known: Set<String> = ["app-id", "base-url", "stores", "tills", "checkouts", "retry-every", "data-dir", "upload-timeout"]
    if let unknown = flags.keys.first(where: { !known.contains($0) }) { fail("unknown flag --\(unknown)\n\n\(usage)", 2) }
    guard let appId = flags["app-id"] ?? environment["DATAINGEST_APP_ID"] else {
        fail("no app id: pass --app-id (ingest-server prints it) or set DATAINGEST_APP_ID", 2)
    }
    var baseURL: URL?
    if let text = flags["base-url"] {
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else { fail("--base-url needs an http(s) URL", 2) }
        baseURL = url
    }
    let stores = number("stores", 3)
    let tills = number("tills", 2)
    let checkouts = number("checkouts", 50)
    let retryEvery = number("retry-every", 10)
    let uploadTimeout = Double(number("upload-timeout", 60))
    do {
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        var ledger = try Ledger.load(ledgerPath)
        var configuration = App.Configuration(baseURL: baseURL, metadataDirectory: dataDirectory + "/dataingest")
        configuration.segmentStore.durability = .full // a recorded invoice survives power loss
        let app = App(id: appId, configuration: configuration)
        let user = try await app.login(credentials: .anonymous)
        let writer = try LogWriter(user: user)
        let recorder = writer.recorder
        var generator = SystemRandomNumberGenerator()
        var added: [String: Ledger.StoreTotals] = [:]
        var retries = 0
        let start = Date()
        for round in 0..<checkouts {
            for s in 1...stores {
                for t in 1...tills {
                    let store = "S" + (s < 10 ? "0" : "") + "\(s)"
                    let till = "T" + (t < 10 ? "0" : "") + "\(t)"
                    let key = "\(store)-\(till)"
                    let number = ledger.nextNumber[key, default: 1]
                    let (invoice, cents) = Checkout.invoice(store: store, till: till, number: number, generator: &generator)
                    try recorder.record(invoice)
                    // A retry of the same invoice (same _id), as after a timeout: the server keeps one.
                    if (round * stores * tills + (s - 1) * tills + t) % retryEvery == 0 {
                        try recorder.record(invoice)
                        retries += 1
                    }
                    ledger.nextNumber[key] = number + 1
                    added[store, default: .init()].invoices += 1
                    added[store, default: .init()].totalCents += cents
                }
            }
        }
        let recorded = added.values.reduce(0) { $0 + $1.invoices }
        say(String(format: "recorded %d invoices (%d recorded twice as retries) in %.1f s; waiting for the upload",
                   recorded, retries, Date().timeIntervalSince(start)))
        writer.shutdown()
        try await user.session.wait(for: .upload, timeout: uploadTimeout)
        for (store, totals) in added {
            ledger.stores[store, default: .init()].invoices += totals.invoices
            ledger.stores[store, default: .init()].totalCents += totals.totalCents
        }
        try ledger.save(ledgerPath)
        for store in added.keys.sorted() {
            say("\(store): \(added[store]!.invoices) invoices, \(Cents.text(added[store]!.totalCents)) USD")
        }
        say("uploaded; ledger \(ledgerPath)")
        exit(0)
    } catch {
        fail("\(error)", 1)
    }

case "verify":
    let known: Set<String> = ["database", "data-dir"]
    if let unknown = flags.keys.first(where: { !known.contains($0) }) { fail("unknown flag --\(unknown)\n\n\(usage)", 2) }
    guard let database = flags["database"] else { fail("verify needs --database PATH (the server's <app id>.sqlite)", 2) }
    do {
        let ledger = try Ledger.load(ledgerPath)
        let stored = try DatabaseTotals.read(database)
        var matches = true
        say("store  invoices(sample)  invoices(db)  total(sample)  total(db)")
        for store in Set(ledger.stores.keys).union(stored.keys).sorted() {
            let mine = ledger.stores[store] ?? .init()
            let theirs = stored[store] ?? .init()
            let same = mine.invoices == theirs.invoices && mine.totalCents == theirs.totalCents
            if !same { matches = false }
            say("\(store)  \(mine.invoices)  \(theirs.invoices)  \(Cents.text(mine.totalCents))  \(Cents.text(theirs.totalCents))\(same ? "" : "  MISMATCH")")
        }
        if matches {
            say("OK: every store's invoices and total match to the cent")
            exit(0)
        }
        say("MISMATCH")
        exit(1)
    } catch {
        fail("\(error)", 1)
    }

default:
    fail("unknown command '\(command)'\n\n\(usage)", 2)
}
