import DataIngest
import Foundation

/// One line of an invoice (embedded: it exists only inside its invoice).
final class InvoiceLine: EmbeddedObject {
    @Persisted var sku: String
    @Persisted var quantity: Int
    @Persisted var unitPrice: Decimal128
    @Persisted var amount: Decimal128
}

/// An invoice from a till: upload-only, kept on disk until the server has it.
///
/// `_id` is derived from the store, the till and the till's sequence number
/// (`S01-T02-000017`), so recording the same invoice again (a retry after a
/// crash or a timeout) cannot create a second row: the server keeps the
/// first and counts the repeat as a duplicate. `previousHash` chains it to
/// the till's previous invoice (``InvoiceRecord/canonicalBytes``).
final class Invoice: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: String
    @Persisted var storeId: String
    @Persisted var tillId: String
    /// The till's sequence number: 1, 2, 3, … without gaps.
    @Persisted var number: Int
    @Persisted var issuedAt: Date
    @Persisted var currency: String
    @Persisted var lines: List<InvoiceLine>
    @Persisted var subtotal: Decimal128
    @Persisted var tax: Decimal128
    @Persisted var total: Decimal128
    /// SHA-256 (lowercase hex) of the till's previous invoice's canonical
    /// bytes; 64 zeros for the till's first invoice.
    @Persisted var previousHash: String

    /// The id of invoice `number` of `till` in `store`.
    static func id(store: String, till: String, number: Int) -> String {
        "\(store)-\(till)-" + String(repeating: "0", count: max(0, 6 - String(number).count)) + String(number)
    }
}

/// Money in whole cents, converted exactly to and from Decimal128 text.
enum Cents {
    /// `1250` → the Decimal128 12.50.
    static func decimal(_ cents: Int) -> Decimal128 {
        (try? Decimal128(isNegative: cents < 0, coefficient: UInt128(cents.magnitude), exponent: -2)) ?? Decimal128(Int64(0))
    }

    /// `1250` → "12.50".
    static func text(_ cents: Int) -> String {
        let magnitude = cents.magnitude
        let fraction = magnitude % 100
        return (cents < 0 ? "-" : "") + "\(magnitude / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }

    /// "12.50", "12.5", "1250E-2", "12" → 1250; nil when not a whole number of cents.
    static func parse(_ text: String) -> Int? {
        guard let value = Decimal(string: text) else { return nil }
        var scaled = value * 100
        var rounded = Decimal()
        NSDecimalRound(&rounded, &scaled, 0, .plain)
        guard rounded == scaled else { return nil }
        return NSDecimalNumber(decimal: rounded).intValue
    }
}
