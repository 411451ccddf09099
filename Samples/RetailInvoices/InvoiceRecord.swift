import Foundation
import IngestSupport

/// An invoice as plain values: what a till journals before committing it,
/// what `verify` and `export` read back from the database, and what the
/// hash chain is computed over. Money is whole cents; the time is whole
/// milliseconds since 1970 (what the database keeps).
struct InvoiceRecord: Codable, Equatable {
    /// One line: `quantity` × `unitPriceCents` = `amountCents`.
    struct Line: Codable, Equatable {
        var sku: String
        var quantity: Int
        var unitPriceCents: Int
        var amountCents: Int
    }

    var store: String
    var till: String
    /// The till's sequence number: 1, 2, 3, … without gaps.
    var number: Int
    var issuedAtMillis: Int64
    var currency: String
    var lines: [Line]
    var subtotalCents: Int
    var taxCents: Int
    var totalCents: Int
    /// The SHA-256 (lowercase hex) of the till's previous invoice's
    /// canonical bytes; ``genesisHash`` for the till's first invoice.
    var previousHash: String

    /// What the first invoice of every till chains to: 64 zeros.
    static let genesisHash = String(repeating: "0", count: 64)

    /// `S01-T02-000017`.
    var id: String { Invoice.id(store: store, till: till, number: number) }

    /// The canonical bytes (format `RetailInvoices/1`, the README's
    /// "Canonical bytes" section): one `name=value` line per field, in a
    /// fixed order, each ended by LF (0x0A); strings as `<UTF-8 byte
    /// count>:<bytes>` so no value needs escaping; integers in decimal
    /// without leading zeros; money as `[-]units.cc`.
    var canonicalBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + 48 * lines.count)
        func field(_ name: String, _ value: String) {
            out += Array(name.utf8)
            out.append(UInt8(ascii: "="))
            out += Array(value.utf8)
            out.append(0x0A)
        }
        func string(_ text: String) -> String { "\(text.utf8.count):\(text)" }
        out += Array("RetailInvoices/1\n".utf8)
        field("store", string(store))
        field("till", string(till))
        field("number", String(number))
        field("issuedAt", String(issuedAtMillis))
        field("currency", string(currency))
        for line in lines {
            field("line", "\(string(line.sku));\(line.quantity);\(Cents.text(line.unitPriceCents));\(Cents.text(line.amountCents))")
        }
        field("subtotal", Cents.text(subtotalCents))
        field("tax", Cents.text(taxCents))
        field("total", Cents.text(totalCents))
        field("previousHash", previousHash)
        return out
    }

    /// SHA-256 of ``canonicalBytes``, lowercase hex: the next invoice's `previousHash`.
    var hash: String {
        Crypto.sha256(canonicalBytes).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
    }

    /// The object the SDK records. `issuedAt` is the millisecond plus half a
    /// millisecond, so the SDK's conversion to BSON (milliseconds, rounded
    /// down) gives back exactly ``issuedAtMillis`` whatever the Double's rounding.
    func makeInvoice() -> Invoice {
        let invoice = Invoice()
        invoice._id = id
        invoice.storeId = store
        invoice.tillId = till
        invoice.number = number
        invoice.issuedAt = Date(timeIntervalSince1970: (Double(issuedAtMillis) + 0.5) / 1000)
        invoice.currency = currency
        for line in lines {
            let object = InvoiceLine()
            object.sku = line.sku
            object.quantity = line.quantity
            object.unitPrice = Cents.decimal(line.unitPriceCents)
            object.amount = Cents.decimal(line.amountCents)
            invoice.lines.append(object)
        }
        invoice.subtotal = Cents.decimal(subtotalCents)
        invoice.tax = Cents.decimal(taxCents)
        invoice.total = Cents.decimal(totalCents)
        invoice.previousHash = previousHash
        return invoice
    }
}
