import Foundation

/// What the sample itself knows it recorded: per store the invoices and their
/// total in cents, and per till the next invoice number. Written (atomically)
/// after each run's upload; `verify` compares it with the server's database.
struct Ledger: Codable {
    struct StoreTotals: Codable {
        var invoices = 0
        var totalCents = 0
    }

    var stores: [String: StoreTotals] = [:]
    var nextNumber: [String: Int] = [:]

    static func load(_ path: String) throws -> Ledger {
        guard FileManager.default.fileExists(atPath: path) else { return Ledger() }
        return try JSONDecoder().decode(Ledger.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
