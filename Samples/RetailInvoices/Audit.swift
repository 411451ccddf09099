/// What `verify` found for one till.
struct TillAudit {
    var store: String
    var till: String
    /// Rows in the database.
    var invoices = 0
    /// The sum of the rows' totals, in cents.
    var totalCents = 0
    /// The last row's number and hash (the chain's head when intact), if any row.
    var head: (number: Int, hash: String)?
    /// The till's journal, when `verify` was given the data directory.
    var journal: TillJournal?
    /// The first broken link: `S01 T02 #17: what is wrong`; nil when the till is intact.
    var brokenLink: String?
}

/// The checks of `verify` (and of `export`, before it writes anything).
enum Audit {
    /// Checks every till's rows, in sequence order: numbered 1, 2, 3, …
    /// with no gap and no repeat; `_id` the one the number gives; each line
    /// `quantity × unitPrice = amount`, `subtotal` the sum of the lines,
    /// `total = subtotal + tax`; `previousHash` the hash of the row before
    /// (the genesis value for #1). With `journals` (the tills' own state),
    /// also that each till's last row is, byte for byte, the last invoice
    /// the till issued, and that the totals agree. Sorted by store and till.
    static func check(_ rows: [StoredInvoice], journals: [TillJournal]?) -> [TillAudit] {
        var byTill: [String: [StoredInvoice]] = [:]
        var audits: [String: TillAudit] = [:]
        for row in rows {
            let key = row.store + "\u{0}" + row.till
            byTill[key, default: []].append(row)
            if audits[key] == nil { audits[key] = TillAudit(store: row.store, till: row.till) }
        }
        for journal in journals ?? [] {
            audits[journal.store + "\u{0}" + journal.till, default: TillAudit(store: journal.store, till: journal.till)].journal = journal
        }
        return audits.keys.sorted().map { key in
            var audit = audits[key]!
            check(byTill[key] ?? [], into: &audit, withJournals: journals != nil)
            return audit
        }
    }

    private static func check(_ rows: [StoredInvoice], into audit: inout TillAudit, withJournals: Bool) {
        func broken(_ number: Int?, _ what: String) {
            if audit.brokenLink == nil {
                audit.brokenLink = "\(audit.store) \(audit.till) " + (number.map { "#\($0)" } ?? "") + ": " + what
            }
        }
        var expected = 1
        var previousHash = InvoiceRecord.genesisHash
        for row in rows {
            audit.invoices += 1
            guard let record = row.record else {
                broken(row.number, "\(row.problem ?? "unreadable") (_id \(row.id))")
                continue
            }
            audit.totalCents += record.totalCents
            audit.head = (record.number, record.hash)
            guard audit.brokenLink == nil else { continue }
            let number = record.number
            if number < expected {
                broken(number, "a second invoice with this number (_id \(row.id)): a row was inserted")
            } else if number > expected {
                broken(
                    expected,
                    (expected == 1
                        ? "missing: the till's invoices in the database start at #\(number)"
                        : "missing: the database goes from #\(expected - 1) to #\(number)") + "; a row was deleted or renumbered")
            } else if row.id != record.id {
                broken(number, "its _id is \(row.id), not \(record.id): the row was renumbered or moved")
            } else if let problem = arithmetic(record) {
                broken(number, problem)
            } else if record.previousHash != previousHash {
                broken(
                    number,
                    number == 1
                        ? "previousHash \(short(record.previousHash)) is not the genesis value (64 zeros): the row was altered"
                        : "previousHash \(short(record.previousHash)) is not the hash of #\(number - 1) (\(short(previousHash))): "
                            + "#\(number - 1) was altered, or this link was")
            }
            previousHash = record.hash
            expected = number + 1
        }
        guard withJournals, audit.brokenLink == nil else { return }
        let last = audit.head?.number ?? 0
        guard let journal = audit.journal else {
            broken(1, "the data directory has no journal for this till: the rows were inserted, or pass the till's --data-dir")
            return
        }
        if journal.issued > last {
            broken(
                last + 1,
                "missing: the till issued #\(journal.issued) but the database ends at "
                    + (last == 0 ? "nothing" : "#\(last)") + "; rows were deleted, or are not uploaded yet (run again)")
        } else if journal.issued < last {
            broken(journal.issued + 1, "not issued by this till (its journal ends at #\(journal.issued)): a row was inserted")
        } else if let head = audit.head, let mine = journal.last, head.hash != mine.hash {
            broken(last, "differs from the till's own copy (hash \(short(head.hash)), the till's \(short(mine.hash))): the row was altered")
        } else if journal.totalCents != audit.totalCents {
            broken(nil, "total \(Cents.text(audit.totalCents)) in the database, \(Cents.text(journal.totalCents)) issued by the till")
        }
    }

    /// Why the invoice's amounts do not add up, or nil.
    static func arithmetic(_ record: InvoiceRecord) -> String? {
        if record.lines.isEmpty { return "has no lines" }
        for (index, line) in record.lines.enumerated() where line.amountCents != line.quantity * line.unitPriceCents {
            return "line \(index + 1) (\(line.sku)): amount \(Cents.text(line.amountCents)) is not "
                + "\(line.quantity) × \(Cents.text(line.unitPriceCents))"
        }
        let sum = record.lines.reduce(0) { $0 + $1.amountCents }
        if record.subtotalCents != sum {
            return "subtotal \(Cents.text(record.subtotalCents)) is not the sum of its lines (\(Cents.text(sum)))"
        }
        if record.totalCents != record.subtotalCents + record.taxCents {
            return "total \(Cents.text(record.totalCents)) is not subtotal \(Cents.text(record.subtotalCents)) "
                + "+ tax \(Cents.text(record.taxCents))"
        }
        return nil
    }

    /// The first 12 hex digits, enough to tell hashes apart in a message.
    static func short(_ hash: String) -> String { String(hash.prefix(12)) + (hash.count > 12 ? "…" : "") }
}
