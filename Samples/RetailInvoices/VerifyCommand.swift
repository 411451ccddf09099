import ArgumentParser
import Foundation

/// `verify`: the ledger against the server's SQLite database, to the cent.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Compares the ledger's per-store counts and totals with the server's SQLite database.",
        discussion: "They must match to the cent; exit status 1 on a mismatch.")

    @Option(help: ArgumentHelp("The server's <data dir>/<app id>.sqlite.", valueName: "path"), completion: .file())
    var database: String
    @OptionGroup var ledger: LedgerOptions

    /// Compares; returns (exit status 0) when everything matches, throws `ExitCode.failure` (1) otherwise.
    func run() throws {
        do {
            let ledger = try Ledger.load(ledger.ledgerPath)
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
                return
            }
        } catch {
            fail("\(error)", 1)
        }
        say("MISMATCH")
        throw ExitCode.failure
    }
}
