/// One SQLite value: what a column holds and what a statement binds.
///
/// ```swift
/// let value: SQLValue = .integer(42)
/// ```
public enum SQLValue: Sendable, Hashable {
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
