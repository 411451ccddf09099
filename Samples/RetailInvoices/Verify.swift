import CSQLite
import Foundation

/// Per-store invoice counts and totals (in cents) from the server's SQLite
/// sink, summed exactly from the stored decimal text.
struct DatabaseTotals {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func read(_ path: String) throws -> [String: Ledger.StoreTotals] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw Failure(description: "cannot open \(path): \(message); pass the server's <data-dir>/<app id>.sqlite")
        }
        defer { sqlite3_close(db) }
        sqlite3_busy_timeout(db, 5_000)
        var statement: OpaquePointer?
        let sql = "SELECT storeId, total FROM Invoice"
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw Failure(description: "cannot read invoices from \(path): \(String(cString: sqlite3_errmsg(db))) (no invoice uploaded yet?)")
        }
        defer { sqlite3_finalize(statement) }
        var totals: [String: Ledger.StoreTotals] = [:]
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else {
                throw Failure(description: "reading \(path) failed: \(String(cString: sqlite3_errmsg(db)))")
            }
            let store = sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? ""
            let text = sqlite3_column_text(statement, 1).map { String(cString: $0) } ?? ""
            guard let cents = Cents.parse(text) else {
                throw Failure(description: "invoice total '\(text)' of store \(store) is not a whole number of cents")
            }
            totals[store, default: .init()].invoices += 1
            totals[store, default: .init()].totalCents += cents
        }
        return totals
    }
}
