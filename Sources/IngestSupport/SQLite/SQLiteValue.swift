/// One SQLite value: what a column holds and what a statement binds.
///
/// ```swift
/// let rows = try connection.rows(sql: "SELECT id FROM users WHERE app_id = ?", arguments: [.text("a1")])
/// if case .integer(let id)? = rows.first?.first { print(id) }
/// ```
package enum SQLiteValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob([UInt8])

    /// The integer, if the value is one.
    package var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    /// The double, if the value is one.
    package var real: Double? { if case .real(let value) = self { value } else { nil } }
    /// The text, if the value is text.
    package var text: String? { if case .text(let value) = self { value } else { nil } }
    /// The bytes, if the value is a blob.
    package var blob: [UInt8]? { if case .blob(let value) = self { value } else { nil } }

    /// A short description for messages (blobs by size only).
    package var summary: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return "'\(value)'"
        case .blob(let bytes): return "a blob of \(bytes.count) bytes"
        }
    }
}
