/// One SQLite value: what a column holds and what a statement binds.
///
/// ```swift
/// let value: SQLValue = .integer(42)
/// ```
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// A short description for messages (blobs by size only).
    var summary: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return "'\(value)'"
        case .blob(let bytes): return "a blob of \(bytes.count) bytes"
        }
    }
}
