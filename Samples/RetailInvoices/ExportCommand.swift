import ArgumentParser
import Foundation

/// `export`: one store's invoices of one day (UTC) as CSV, one record per
/// invoice line, the same bytes every time.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Writes one store's invoices of one day (UTC) as CSV for an accountant, one record per invoice line.",
        discussion: """
            Money as exact decimals, sorted by till, number and line, RFC 4180 (CRLF, quotes only where needed), \
            so the same invoices give the same bytes. The store's hash chains are checked first (from the \
            database alone); a broken link exits 1 and writes nothing. The columns are listed in the README.
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: ArgumentHelp("The store (S01).", valueName: "store"))
    var store: String
    @Option(
        help: ArgumentHelp("The day, UTC (2026-12-01).", valueName: "yyyy-mm-dd"),
        transform: { text in
            guard let start = UTCTime.dayStart(text) else { throw ValidationError("--date needs a day such as 2026-12-01, not '\(text)'") }
            return start
        })
    var date: Int64
    @Option(help: ArgumentHelp("Write the CSV to this file (default: standard output).", valueName: "path"), completion: .file())
    var output: String?

    static let header = [
        "store", "till", "number", "invoice_id", "issued_at", "currency", "line", "sku", "quantity",
        "unit_price", "line_amount", "invoice_subtotal", "invoice_tax", "invoice_total",
        "previous_hash", "invoice_hash",
    ]

    func run() throws {
        do {
            let rows = try database.source.invoices().filter { $0.store == store }
            if let broken = Audit.check(rows, journals: nil).compactMap(\.brokenLink).first {
                throw RetailError("not exported: the first broken link is \(broken); see verify")
            }
            var text = CSV.record(Self.header)
            let day = date..<(date + 86_400_000)
            // rows are sorted by till and number already.
            for record in rows.compactMap(\.record) where day.contains(record.issuedAtMillis) {
                let hash = record.hash
                for (index, line) in record.lines.enumerated() {
                    text += CSV.record([
                        record.store, record.till, String(record.number), record.id, UTCTime.text(millis: record.issuedAtMillis),
                        record.currency, String(index + 1), line.sku, String(line.quantity), Cents.text(line.unitPriceCents),
                        Cents.text(line.amountCents), Cents.text(record.subtotalCents), Cents.text(record.taxCents),
                        Cents.text(record.totalCents), record.previousHash, hash,
                    ])
                }
            }
            if let output {
                try DurableFile.write(Array(text.utf8), to: output)
            } else {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        } catch {
            fail("\(error)", 1)
        }
    }
}
