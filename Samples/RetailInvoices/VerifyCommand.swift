import ArgumentParser
import Foundation

/// `verify`: every till's invoices in the server's database (SQLite or
/// PostgreSQL): numbering, hash chain, totals to the cent, and each till's
/// last invoice against the till's own journal.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Checks every till's invoices in the server's database: numbering, hash chain, totals to the cent.",
        discussion: """
            Per store and till: numbered 1, 2, 3, … without gaps or repeats, each invoice's amounts adding up, \
            each previousHash the SHA-256 of the previous invoice's canonical bytes, and the last invoice and the \
            total the ones the till's journal in --data-dir holds. Exit status 1 names the first broken link \
            of each broken till (store, till, number, what is wrong).
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var data: DataOptions

    /// Checks; returns (exit status 0) when every till is intact, throws `ExitCode.failure` (1) otherwise.
    func run() throws {
        let audits: [TillAudit]
        let journals: [TillJournal]
        do {
            let rows = try database.source.invoices()
            journals = try TillJournal.loadAll(data.dataDirectory)
            audits = Audit.check(rows, journals: journals.isEmpty ? nil : journals)
        } catch {
            fail("\(error)", 1)
        }
        say("store  till  invoices  total(db)  total(till)  head  chain")
        for store in Set(audits.map(\.store)).sorted() {
            let tills = audits.filter { $0.store == store }
            for audit in tills {
                let head = audit.head.map { "#\($0.number) \(Audit.short($0.hash))" } ?? "-"
                let issued = audit.journal.map { Cents.text($0.totalCents) } ?? "-"
                say(
                    "\(store)  \(audit.till)  \(audit.invoices)  \(Cents.text(audit.totalCents))  \(issued)  \(head)  "
                        + (audit.brokenLink == nil ? "OK" : "BROKEN"))
            }
            let total = tills.reduce(0) { $0 + $1.totalCents }
            let issued = tills.allSatisfy { $0.journal != nil } ? Cents.text(tills.reduce(0) { $0 + ($1.journal?.totalCents ?? 0) }) : "-"
            say("\(store)  all  \(tills.reduce(0) { $0 + $1.invoices })  \(Cents.text(total))  \(issued)")
        }
        let broken = audits.compactMap(\.brokenLink)
        if broken.isEmpty {
            say(
                "OK: \(audits.count) tills in \(Set(audits.map(\.store)).count) stores: numbering without gaps, "
                    + "every hash chain unbroken, totals match to the cent")
            if journals.isEmpty {
                say(
                    "note: no till journals in \(TillJournal.directory(data.dataDirectory)): the database alone was checked, "
                        + "so deleted last invoices of a till would not show")
            }
            return
        }
        for link in broken { say("BROKEN \(link)") }
        say("FAILED: the first broken link is \(broken[0])")
        throw ExitCode.failure
    }
}

/// Where the invoices are: `--database` (SQLite) or `--postgres`.
struct DatabaseOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("A SQLite sink's file: the development server's <data dir>/<app id>.sqlite.", valueName: "path"),
        completion: .file())
    var database: String?
    @Option(help: ArgumentHelp("A PostgreSQL sink's connection string (postgresql://user@host/db).", valueName: "url"))
    var postgres: String?

    mutating func validate() throws {
        if database == nil && postgres == nil {
            throw ValidationError("give --database PATH (a SQLite sink) or --postgres URL (a PostgreSQL sink)")
        }
        if database != nil && postgres != nil { throw ValidationError("give --database or --postgres, not both") }
    }

    var source: InvoiceDatabase {
        if let database { return .sqlite(path: database) }
        return .postgres(url: postgres ?? "")
    }
}
