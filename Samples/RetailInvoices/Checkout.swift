import DataIngest
import Foundation

/// Simulated checkouts: random baskets from a small catalogue, 8.25 % tax
/// rounded half up to the cent. Amounts are whole cents throughout, so the
/// totals the sample keeps are exact.
struct Checkout {
    static let catalogue: [(sku: String, cents: Int)] = [
        ("COFFEE-250G", 7_49), ("MILK-1L", 1_19), ("BREAD", 2_35), ("APPLES-1KG", 3_99),
        ("CHEESE-200G", 4_15), ("WATER-6X1.5L", 3_30), ("CHOCOLATE", 1_89), ("NEWSPAPER", 2_50),
    ]
    static let taxBasisPoints = 825

    /// A new invoice with 1 to 5 lines.
    static func invoice(store: String, till: String, number: Int, generator: inout some RandomNumberGenerator) -> (Invoice, totalCents: Int) {
        let invoice = Invoice()
        invoice._id = Invoice.id(store: store, till: till, number: number)
        invoice.storeId = store
        invoice.tillId = till
        invoice.number = number
        invoice.issuedAt = Date()
        invoice.currency = "USD"
        var subtotal = 0
        for _ in 0..<Int.random(in: 1...5, using: &generator) {
            let item = catalogue[Int.random(in: 0..<catalogue.count, using: &generator)]
            let quantity = Int.random(in: 1...4, using: &generator)
            let line = InvoiceLine()
            line.sku = item.sku
            line.quantity = quantity
            line.unitPrice = Cents.decimal(item.cents)
            line.amount = Cents.decimal(item.cents * quantity)
            invoice.lines.append(line)
            subtotal += item.cents * quantity
        }
        let tax = (subtotal * taxBasisPoints + 5_000) / 10_000
        invoice.subtotal = Cents.decimal(subtotal)
        invoice.tax = Cents.decimal(tax)
        invoice.total = Cents.decimal(subtotal + tax)
        return (invoice, subtotal + tax)
    }
}
