import ArgumentParser
import DataIngest
import Foundation
import IngestCommandLine

/// `run`: simulated checkouts, each invoice recorded with IngestRecorder.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Records simulated checkouts' invoices, waits for the upload, adds the totals to the ledger.",
        discussion: """
            Each invoice (Decimal128 amounts, embedded lines, _id from store, till and invoice number) is \
            recorded with IngestRecorder, which returns once it is committed with full durability; every \
            K-th invoice is recorded a second time, as a retry would (the server keeps one). Then it waits \
            for the upload and adds the per-store totals to the ledger in --data-dir.
            """)

    /// `--app-id` (or `$DATAINGEST_APP_ID`) and `--base-url`.
    @OptionGroup var server: ServerOptions
    @OptionGroup var ledger: LedgerOptions

    @Option(help: ArgumentHelp("Stores (default 3).", valueName: "n"), transform: ArgumentParsing.positiveInteger("--stores"))
    var stores = 3
    @Option(help: ArgumentHelp("Tills per store (default 2).", valueName: "n"), transform: ArgumentParsing.positiveInteger("--tills"))
    var tills = 2
    @Option(help: ArgumentHelp("Checkouts per till (default 50).", valueName: "n"), transform: ArgumentParsing.positiveInteger("--checkouts"))
    var checkouts = 50
    @Option(name: .customLong("retry-every"), help: ArgumentHelp("Record every K-th invoice twice, as a retry would (default 10).", valueName: "k"),
            transform: ArgumentParsing.positiveInteger("--retry-every"))
    var retryEvery = 10
    @Option(name: .customLong("upload-timeout"), help: ArgumentHelp("How long to wait for the upload, in whole seconds (default 60).", valueName: "s"),
            transform: ArgumentParsing.positiveInteger("--upload-timeout"))
    var uploadTimeout = 60

    /// Runs the checkouts; returns (exit status 0) once uploaded and in the ledger, exits 1 on a failure.
    func run() async {
        let dataDirectory = ledger.dataDirectory
        let ledgerPath = ledger.ledgerPath
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            var ledger = try Ledger.load(ledgerPath)
            var configuration = App.Configuration(baseURL: server.baseURL, metadataDirectory: dataDirectory + "/dataingest")
            configuration.segmentStore.durability = .full // a recorded invoice survives power loss
            let app = App(id: server.appId, configuration: configuration)
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
            try await user.session.wait(for: .upload, timeout: Double(uploadTimeout))
            for (store, totals) in added {
                ledger.stores[store, default: .init()].invoices += totals.invoices
                ledger.stores[store, default: .init()].totalCents += totals.totalCents
            }
            try ledger.save(ledgerPath)
            for store in added.keys.sorted() {
                say("\(store): \(added[store]!.invoices) invoices, \(Cents.text(added[store]!.totalCents)) USD")
            }
            say("uploaded; ledger \(ledgerPath)")
        } catch {
            fail("\(error)", 1)
        }
    }
}
