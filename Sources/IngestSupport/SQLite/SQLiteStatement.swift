import CSQLite

/// A prepared statement: typed binding of parameters (1-based, as in SQL)
/// and typed reading of the current row's columns (0-based, as in SQLite).
///
/// Made by ``SQLiteConnection/cachedStatement(sql:)`` (kept by the
/// connection until its ``SQLiteConnection/close()``) or
/// ``SQLiteConnection/makeStatement(sql:)``; finalized in `deinit`, when
/// the last reference goes. A statement still held when its connection is
/// closed keeps the connection's memory alive (`sqlite3_close_v2`) until
/// it is released, so a statement never points at freed memory and needs no
/// check per call. Used by the connection's owner only, like the connection.
///
/// ```swift
/// let insert = try db.cachedStatement(sql: "INSERT INTO t (id, name) VALUES (?, ?)")
/// try insert.bind(Int64(1), at: 1)
/// try insert.bind("a", at: 2)
/// while try insert.step() {}
/// insert.reset()
/// ```
public final class SQLiteStatement {
    /// The statement's SQL.
    package let sql: String
    private let path: String
    // A `let`, and internal: the binds, step, reset and changes the SQLite
    // sink calls per object are @inlinable (their failure paths are not),
    // so that its insert path calls SQLite directly instead of through a
    // wrapper call per bind (Benchmarks/README.md has the instruction
    // counts). The class and SQLiteError are `public` (their members are
    // `package`) because this toolchain neither serializes nor inlines the
    // @inlinable members of a `package` type.
    @usableFromInline let pointer: OpaquePointer

    init(_ pointer: OpaquePointer, sql: String, path: String) {
        self.pointer = pointer
        self.sql = sql
        self.path = path
    }

    deinit { sqlite3_finalize(pointer) }

    @usableFromInline
    func failure(_ operation: SQLiteError.Operation, _ rc: Int32, _ pointer: OpaquePointer) -> SQLiteError {
        SQLiteError.failure(operation, rc, db: sqlite3_db_handle(pointer), sql: sql, path: path)
    }

    /// Resets the statement to run again and clears every binding (unbound
    /// parameters are NULL).
    @inlinable
    package func reset() {
        sqlite3_reset(pointer)
        sqlite3_clear_bindings(pointer)
    }

    // MARK: Binding

    /// Binds `values` to parameters 1, 2, ….
    package func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds `value` to the parameter at `index` (1-based).
    package func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let number): try bind(number, at: index)
        case .real(let number): try bind(number, at: index)
        case .text(let text): try bind(text, at: index)
        case .blob(let bytes): try bind(blob: bytes, at: index)
        }
    }

    @inlinable
    package func bindNull(at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_null(pointer, index), index, pointer)
    }

    @inlinable
    package func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_int64(pointer, index, value), index, pointer)
    }

    @inlinable
    package func bind(_ value: Double, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_double(pointer, index, value), index, pointer)
    }

    /// Binds text (copied), with its byte count: text containing NUL is stored whole.
    package func bind(_ text: String, at index: Int32) throws(SQLiteError) {
        var text = text
        let rc = text.withUTF8 { utf8 -> Int32 in
            // A zero-length text still needs a non-null pointer to be text, not NULL.
            let base = UnsafeRawPointer(utf8.baseAddress) ?? UnsafeRawPointer(bitPattern: 1)
            return sqlite3_bind_text(
                pointer, index, base?.assumingMemoryBound(to: CChar.self), Int32(utf8.count),
                dataingest_sqlite_transient())
        }
        try check(rc, index, pointer)
    }

    /// Binds bytes (copied) as a blob.
    package func bind(blob bytes: [UInt8], at index: Int32) throws(SQLiteError) {
        let rc = bytes.withUnsafeBytes { raw in Self.bindBlob(pointer, index, raw, copying: true) }
        try check(rc, index, pointer)
    }

    /// Binds bytes (copied) as a blob.
    package func bind(blob bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        try check(Self.bindBlob(pointer, index, bytes, copying: true), index, pointer)
    }

    /// Binds bytes that stay valid and unchanged until the statement is
    /// reset (SQLite does not copy them): the caller steps and resets
    /// inside the closure that lends them.
    @inlinable
    package func bind(borrowedText bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
        try check(
            sqlite3_bind_text(
                pointer, index, base?.assumingMemoryBound(to: CChar.self), Int32(bytes.count),
                dataingest_sqlite_static()), index, pointer)
    }

    /// Binds bytes as a blob without copying them; see ``bind(borrowedText:at:)``.
    @inlinable
    package func bind(borrowedBlob bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        try check(Self.bindBlob(pointer, index, bytes, copying: false), index, pointer)
    }

    @inlinable
    static func bindBlob(_ pointer: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer, copying: Bool) -> Int32 {
        // A zero-length blob still needs a non-null pointer to be a blob, not NULL.
        let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
        return sqlite3_bind_blob(
            pointer, index, base, Int32(bytes.count),
            copying ? dataingest_sqlite_transient() : dataingest_sqlite_static())
    }

    @inlinable
    func check(_ rc: Int32, _ index: Int32, _ pointer: OpaquePointer) throws(SQLiteError) {
        if rc != SQLITE_OK { throw failure(.bind(parameter: index), rc, pointer) }
    }

    // MARK: Running

    /// Advances; returns whether a row is available (false when done).
    @inlinable
    package func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(pointer)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw failure(.step, rc, pointer)
        }
    }

    /// The number of rows the connection's last INSERT, UPDATE or DELETE
    /// changed: this statement's, just after it ran.
    @inlinable
    package var changes: Int {
        Int(sqlite3_changes(sqlite3_db_handle(pointer)))
    }

    // MARK: Reading the current row

    /// The storage class of a column's value.
    package enum ColumnType: Sendable {
        case integer, real, text, blob, null
    }

    /// The number of columns of a row.
    package var columnCount: Int32 {
        sqlite3_column_count(pointer)
    }

    /// The storage class of column `column`'s value in the current row.
    package func columnType(at column: Int32) -> ColumnType {
        switch sqlite3_column_type(pointer, column) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    /// The column as an integer (SQLite converts; NULL is 0).
    package func int64(at column: Int32) -> Int64 {
        sqlite3_column_int64(pointer, column)
    }

    /// The column as a double (SQLite converts; NULL is 0).
    package func double(at column: Int32) -> Double {
        sqlite3_column_double(pointer, column)
    }

    /// The column as text, all its bytes (SQLite converts; NULL is "").
    package func text(at column: Int32) -> String {
        withUnsafeBytes(at: column, asText: true) { String(decoding: $0, as: UTF8.self) }
    }

    /// The column as bytes (NULL is empty).
    package func blob(at column: Int32) -> [UInt8] {
        withUnsafeBytes(at: column, asText: false) { Array($0) }
    }

    /// Calls `body` with the bytes of the column's text (`asText`) or blob
    /// form, valid only inside `body`.
    package func withUnsafeBytes<R>(at column: Int32, asText: Bool, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        Self.withBytes(pointer, column, asText: asText, body)
    }

    private static func withBytes<R>(
        _ pointer: OpaquePointer, _ column: Int32, asText: Bool,
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        // The pointer first, then the count: the documented order when SQLite converts.
        let base = asText ? UnsafeRawPointer(sqlite3_column_text(pointer, column)) : sqlite3_column_blob(pointer, column)
        let count = Int(sqlite3_column_bytes(pointer, column))
        guard let base, count > 0 else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The value of column `column`, in its storage class.
    package func value(at column: Int32) -> SQLiteValue {
        Self.value(pointer, column)
    }

    /// The current row's values.
    package func row() -> [SQLiteValue] {
        let count = sqlite3_column_count(pointer)
        var values: [SQLiteValue] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count {
            values.append(Self.value(pointer, column))
        }
        return values
    }

    private static func value(_ pointer: OpaquePointer, _ column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(pointer, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(pointer, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(pointer, column))
        case SQLITE_TEXT:
            return .text(withBytes(pointer, column, asText: true) { String(decoding: $0, as: UTF8.self) })
        case SQLITE_BLOB:
            return .blob(withBytes(pointer, column, asText: false) { Array($0) })
        default:
            return .null
        }
    }
}
