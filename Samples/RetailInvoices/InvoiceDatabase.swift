import Foundation
import IngestServer
import IngestSupport

/// One row of the `Invoice` table as `verify` and `export` see it: the
/// columns as text, and the invoice they make, or why they make none.
struct StoredInvoice {
    var id: String
    var store: String
    var till: String
    /// The `number` column; nil when it is not a whole number.
    var number: Int?
    /// The invoice the row holds; nil when a column cannot be read (``problem`` says which).
    var record: InvoiceRecord?
    var problem: String?

    /// The columns, in the order both readers select them.
    static let columns = [
        "_id", "storeId", "tillId", "number", "issuedAt", "currency", "lines", "subtotal", "tax", "total", "previousHash",
    ]

    /// Builds the row from its columns as text (`issuedAt` in milliseconds
    /// since 1970, `lines` the sink's relaxed Extended JSON).
    init(_ text: [String?]) {
        func column(_ name: String) -> String? { text[Self.columns.firstIndex(of: name)!] }
        id = column("_id") ?? ""
        store = column("storeId") ?? ""
        till = column("tillId") ?? ""
        number = column("number").flatMap { Int($0) }
        do {
            guard let number else { throw RetailError("number \(column("number") ?? "NULL") is not a whole number") }
            guard let millisText = column("issuedAt"), let millis = Int64(millisText) else {
                throw RetailError("issuedAt \(column("issuedAt") ?? "NULL") is not a time")
            }
            func money(_ name: String) throws -> Int {
                guard let value = column(name), let cents = Cents.parse(value) else {
                    throw RetailError("\(name) \(column(name) ?? "NULL") is not a whole number of cents")
                }
                return cents
            }
            record = InvoiceRecord(
                store: store, till: till, number: number, issuedAtMillis: millis,
                currency: column("currency") ?? "", lines: try Self.lines(column("lines")),
                subtotalCents: try money("subtotal"), taxCents: try money("tax"),
                totalCents: try money("total"), previousHash: column("previousHash") ?? "")
        } catch {
            problem = "\(error)"
        }
    }

    /// `[{"sku": "BREAD", "quantity": 2, "unitPrice": {"$numberDecimal": "2.35"}, "amount": {...}}, ...]`.
    private static func lines(_ text: String?) throws -> [InvoiceRecord.Line] {
        guard let text, case .array(let elements) = try? JSONValue(parsing: text, options: .strict()) else {
            throw RetailError("lines \(text ?? "NULL") is not a JSON array")
        }
        return try elements.enumerated().map { index, element in
            func money(_ name: String) throws -> Int {
                guard let text = element[name]?["$numberDecimal"]?.stringValue ?? element[name]?.stringValue,
                    let cents = Cents.parse(text)
                else {
                    throw RetailError("line \(index + 1): \(name) is not a whole number of cents")
                }
                return cents
            }
            guard let sku = element["sku"]?.stringValue else { throw RetailError("line \(index + 1) has no sku") }
            guard
                let quantity = element["quantity"]?.integerValue ?? element["quantity"]?["$numberLong"]?.stringValue.flatMap({ Int64($0) })
            else { throw RetailError("line \(index + 1): quantity is not a whole number") }
            return InvoiceRecord.Line(
                sku: sku, quantity: Int(quantity), unitPriceCents: try money("unitPrice"),
                amountCents: try money("amount"))
        }
    }
}

/// Where the server's sink wrote the invoices: its SQLite file or a
/// PostgreSQL database. Both are read through the project's own layers
/// (IngestSupport's SQLite connection, IngestServer's libpq connection).
enum InvoiceDatabase {
    case sqlite(path: String)
    case postgres(url: String)

    /// Every row of the `Invoice` table, sorted by store, till, number and `_id`.
    func invoices() throws -> [StoredInvoice] {
        let quoted = StoredInvoice.columns.map { "\"\($0)\"" }
        var rows: [StoredInvoice]
        switch self {
        case .sqlite(let path):
            let db: SQLiteConnection
            do {
                db = try SQLiteConnection(path: path, options: .init(access: .readOnly))
            } catch {
                throw RetailError("cannot open \(path): \(error); pass the server's <data-dir>/<app id>.sqlite")
            }
            defer { db.close() }
            do {
                rows = try db.rows(sql: "SELECT \(quoted.joined(separator: ", ")) FROM \"Invoice\"").map { row in
                    StoredInvoice(
                        row.map { value in
                            switch value {
                            case .null: nil
                            case .integer(let n): String(n)
                            case .real(let d): String(d)
                            case .text(let s): s
                            case .blob(let b): String(decoding: b, as: UTF8.self)
                            }
                        })
                }
            } catch {
                throw RetailError(
                    "cannot read invoices from \(path): \(error) (no invoice uploaded yet, or a database from before the hash chain?)")
            }
        case .postgres(let url):
            // issuedAt is timestamptz: its milliseconds since 1970, exactly;
            // numeric and jsonb as their text.
            let select = quoted.map { column in
                switch column {
                case "\"issuedAt\"": "round(extract(epoch FROM \"issuedAt\") * 1000)::bigint::text"
                default: "\(column)::text"
                }
            }
            let db: PostgresConnection
            do {
                db = try PostgresConnection(url)
            } catch {
                throw RetailError("\(error)")
            }
            defer { db.close() }
            do {
                rows = try db.queryText("SELECT \(select.joined(separator: ", ")) FROM \"Invoice\"").map { StoredInvoice($0) }
            } catch {
                throw RetailError("cannot read invoices from PostgreSQL at \(db.displayName): \(error) (no invoice uploaded yet?)")
            }
        }
        rows.sort { ($0.store, $0.till, $0.number ?? Int.max, $0.id) < ($1.store, $1.till, $1.number ?? Int.max, $1.id) }
        return rows
    }
}
