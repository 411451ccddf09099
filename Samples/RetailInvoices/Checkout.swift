import Foundation

/// Simulated checkouts: random baskets from a small catalogue, 8.25 % tax
/// rounded half up to the cent. Amounts are whole cents throughout, so the
/// totals the sample keeps are exact.
struct Checkout {
    static let catalogue: [(sku: String, cents: Int)] = [
        ("COFFEE-250G", 7_49), ("MILK-1L", 1_19), ("BREAD", 2_35), ("APPLES-1KG", 3_99),
        ("CHEESE-200G", 4_15), ("WATER-6X1.5L", 3_30), ("CHOCOLATE", 1_89), ("NEWSPAPER", 2_50),
        ("MUG \"I ♥ NY\", 0.3L", 5_95),  // a comma, quotes and UTF-8: what the CSV and the canonical bytes must carry
    ]
    static let taxBasisPoints = 825

    /// Invoice `number` of `till` in `store` with 1 to 5 lines, chained to `previousHash`.
    static func invoice(
        store: String, till: String, number: Int, issuedAtMillis: Int64, previousHash: String,
        generator: inout some RandomNumberGenerator
    ) -> InvoiceRecord {
        var lines: [InvoiceRecord.Line] = []
        for _ in 0..<Int.random(in: 1...5, using: &generator) {
            let item = catalogue[Int.random(in: 0..<catalogue.count, using: &generator)]
            let quantity = Int.random(in: 1...4, using: &generator)
            lines.append(.init(sku: item.sku, quantity: quantity, unitPriceCents: item.cents, amountCents: item.cents * quantity))
        }
        let subtotal = lines.reduce(0) { $0 + $1.amountCents }
        let tax = (subtotal * taxBasisPoints + 5_000) / 10_000
        return InvoiceRecord(
            store: store, till: till, number: number, issuedAtMillis: issuedAtMillis, currency: "USD",
            lines: lines, subtotalCents: subtotal, taxCents: tax, totalCents: subtotal + tax,
            previousHash: previousHash)
    }
}

/// SplitMix64: the baskets of `run --seed N`, the same on every machine.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
