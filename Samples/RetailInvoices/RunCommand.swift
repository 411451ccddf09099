import ArgumentParser
import DataIngest
import Foundation
import IngestCommandLine

/// `run`: simulated checkouts, each invoice journaled by its till, then
/// recorded with IngestRecorder.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Records simulated checkouts' invoices, each chained to its till's previous one, and waits for the upload.",
        discussion: """
            Each invoice (Decimal128 amounts, embedded lines, the till's sequence number, the SHA-256 of the \
            till's previous invoice) is first written to its till's journal in --data-dir/tills, durably, then \
            recorded with IngestRecorder, which returns once it is committed with full durability. A till first \
            records its journaled last invoice again (the server keeps one copy), so a run after a crash \
            continues every chain. Every K-th invoice is recorded a second time, as a retry would.
            """)

    /// `--app-id` (or `$DATAINGEST_APP_ID`) and `--base-url`.
    @OptionGroup var server: ServerOptions
    @OptionGroup var data: DataOptions

    @Option(help: ArgumentHelp("Stores (default 3).", valueName: "n"), transform: ArgumentParsing.positiveInteger("--stores"))
    var stores = 3
    @Option(help: ArgumentHelp("Tills per store (default 2).", valueName: "n"), transform: ArgumentParsing.positiveInteger("--tills"))
    var tills = 2
    @Option(
        help: ArgumentHelp("Checkouts per till (default 50).", valueName: "n"), transform: ArgumentParsing.positiveInteger("--checkouts"))
    var checkouts = 50
    @Option(
        name: .customLong("retry-every"),
        help: ArgumentHelp("Record every K-th invoice twice, as a retry would (default 10).", valueName: "k"),
        transform: ArgumentParsing.positiveInteger("--retry-every"))
    var retryEvery = 10
    @Option(
        name: .customLong("upload-timeout"),
        help: ArgumentHelp("How long to wait for the upload, in whole seconds (default 60).", valueName: "s"),
        transform: ArgumentParsing.positiveInteger("--upload-timeout"))
    var uploadTimeout = 60
    @Option(help: ArgumentHelp("Baskets from this seed, the same on every run (default: random).", valueName: "n"))
    var seed: UInt64?
    @Option(
        name: .customLong("simulated-time"),
        help: ArgumentHelp(
            "Issue the invoices at simulated times, this one (UTC, 2026-12-01T09:00:00Z) and then one second apart, not the clock's.",
            valueName: "time"), transform: UTCTime.parseOption)
    var simulatedTime: Int64?

    /// Runs the checkouts; returns (exit status 0) once uploaded, exits 1 on a failure.
    func run() async {
        let dataDirectory = data.dataDirectory
        do {
            try FileManager.default.createDirectory(atPath: TillJournal.directory(dataDirectory), withIntermediateDirectories: true)
            try TillLock.acquire(dataDirectory)
            var configuration = App.Configuration(baseURL: server.baseURL, metadataDirectory: dataDirectory + "/dataingest")
            configuration.segmentStore.durability = .full  // a recorded invoice survives power loss
            let app = App(id: server.appId, configuration: configuration)
            let user = try await app.login(credentials: .anonymous)
            let writer = try LogWriter(user: user)
            let recorder = writer.recorder

            // Recovery: each till's last journaled invoice may or may not have
            // been committed before the last run ended; recording it again is
            // harmless (same _id, same bytes: the server keeps one).
            var journals: [String: TillJournal] = [:]
            for journal in try TillJournal.loadAll(dataDirectory) {
                journals["\(journal.store)-\(journal.till)"] = journal
                if let last = journal.last { try recorder.record(last.makeInvoice()) }
            }
            if !journals.isEmpty {
                say("re-recorded the last journaled invoice of \(journals.values.filter { $0.last != nil }.count) tills")
            }

            var random: any RandomNumberGenerator =
                seed.map { SeededGenerator(state: $0) as any RandomNumberGenerator }
                ?? SystemRandomNumberGenerator()
            var added: [String: (invoices: Int, cents: Int)] = [:]
            var retries = 0
            var issued = 0
            let start = Date()
            for round in 0..<checkouts {
                for s in 1...stores {
                    for t in 1...tills {
                        let store = "S" + (s < 10 ? "0" : "") + "\(s)"
                        let till = "T" + (t < 10 ? "0" : "") + "\(t)"
                        let key = "\(store)-\(till)"
                        let journal = try journals[key] ?? TillJournal.load(dataDirectory, store: store, till: till)
                        let (number, previousHash) = journal.next
                        let millis = simulatedTime.map { $0 + Int64(issued) * 1000 } ?? Int64(Date().timeIntervalSince1970 * 1000)
                        let invoice = Checkout.invoice(
                            store: store, till: till, number: number, issuedAtMillis: millis,
                            previousHash: previousHash, generator: &random)
                        issued += 1
                        CrashPoint.issuing()
                        // 1. The till's journal, durably: invoice N is fixed before any copy of it exists.
                        let updated = journal.issuing(invoice)
                        try updated.save(dataDirectory)
                        journals[key] = updated
                        CrashPoint.reached(.journaled)
                        // 2. The commit: the durable point of the invoice.
                        try recorder.record(invoice.makeInvoice())
                        CrashPoint.reached(.committed)
                        // A retry of the same invoice (same _id), as after a timeout: the server keeps one.
                        if (round * stores * tills + (s - 1) * tills + t) % retryEvery == 0 {
                            try recorder.record(invoice.makeInvoice())
                            retries += 1
                        }
                        added[store, default: (0, 0)].invoices += 1
                        added[store, default: (0, 0)].cents += invoice.totalCents
                    }
                }
            }
            say(
                String(
                    format: "recorded %d invoices (%d recorded twice as retries) in %.1f s; waiting for the upload",
                    issued, retries, Date().timeIntervalSince(start)))
            writer.shutdown()
            try await user.session.wait(for: .upload, timeout: Double(uploadTimeout))
            for store in added.keys.sorted() {
                say("\(store): \(added[store]!.invoices) invoices, \(Cents.text(added[store]!.cents)) USD")
            }
            say("uploaded; till journals in \(TillJournal.directory(dataDirectory))")
        } catch {
            fail("\(error)", 1)
        }
    }
}
