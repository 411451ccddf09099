#if canImport(Glibc)
import Glibc
#endif
import CPostgres

/// One libpq connection to PostgreSQL: simple statements, parameterized
/// statements, and `COPY … FROM STDIN`.
///
/// ```swift
/// let connection = try PostgresConnection("postgresql://ingest@127.0.0.1/weather?sslmode=require")
/// try connection.execute("CREATE TABLE IF NOT EXISTS t (id bigint PRIMARY KEY)")
/// let rows = try connection.query("SELECT id FROM t WHERE id > $1", [.text("10")])
/// ```
///
/// Not thread-safe: one owner at a time (``PostgresPool`` hands a connection
/// to one caller at a time). Authentication, TLS (`sslmode`, `sslrootcert`,
/// …) and timeouts are libpq's, set in the connection string.
package final class PostgresConnection {
    /// A statement parameter, sent in text or binary form.
    package enum Value: Sendable {
        /// SQL NULL.
        case null
        /// The parameter's text form (as in SQL literals).
        case text(String)
        /// Raw bytes, sent in binary format (for `bytea`).
        case bytes([UInt8])
    }

    private var conn: OpaquePointer?
    /// The connection string without its password, for messages.
    package let displayName: String
    /// State the owner keeps per database session (e.g. temporary tables it
    /// created); it dies with the connection.
    package var sessionState: [String: String] = [:]

    /// Opens a connection. `connection` is a libpq connection string or URI;
    /// unless it sets them, `connect_timeout` is 10 seconds and
    /// `application_name` is `ingest-server`.
    ///
    /// - Throws: ``PostgresError`` `.connection` with libpq's reason.
    package init(_ connection: String) throws(PostgresError) {
        displayName = Self.redacted(connection)
        // With expand_dbname the string's own settings override the earlier
        // keywords, so these are only defaults.
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = ["10", "ingest-server", connection]
        let handle = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle else {
            throw PostgresError(.connection, "libpq could not allocate a connection to \(displayName)")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = Self.message(handle)
            PQfinish(handle)
            throw PostgresError(
                .connection,
                "cannot connect to PostgreSQL at \(displayName): \(reason); "
                    + "check that the server runs and the connection string (host, port, user, password, sslmode)")
        }
        // NOTICEs (e.g. "table does not exist, skipping") would go to stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        conn = handle
    }

    deinit { close() }

    /// Closes the connection (idempotent).
    package func close() {
        if let conn { PQfinish(conn) }
        conn = nil
    }

    /// Whether libpq still considers the connection usable.
    package var isHealthy: Bool {
        guard let conn else { return false }
        return PQstatus(conn) == CONNECTION_OK
    }

    /// Whether a transaction is open (or failed and not rolled back yet).
    package var inTransaction: Bool {
        guard let conn else { return false }
        let status = PQtransactionStatus(conn)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    // MARK: - Statements

    /// Runs one or more statements without parameters; returns the number of
    /// rows the last one affected.
    @discardableResult
    package func execute(_ sql: String) throws(PostgresError) -> Int {
        let conn = try handle()
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        try check(result, sql)
        return Self.affected(result)
    }

    /// Runs several `;`-separated statements without parameters in one
    /// round trip; returns the rows each one affected, in order. After a
    /// failing statement the rest are skipped and its error is thrown.
    ///
    /// ```swift
    /// let counts = try connection.executeEach("BEGIN; INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING; SAVEPOINT s")
    /// // [0, 1, 0]: the INSERT stored one row
    /// ```
    @discardableResult
    package func executeEach(_ sql: String) throws(PostgresError) -> [Int] {
        let conn = try handle()
        guard PQsendQuery(conn, sql) == 1 else { throw failure(nil, Self.message(conn), sql) }
        var counts: [Int] = []
        var firstError: PostgresError?
        // Bounded: libpq returns nil once the query is complete or the connection is gone.
        while let result = PQgetResult(conn) {
            if firstError == nil {
                do throws(PostgresError) {
                    try check(result, sql)
                    counts.append(Self.affected(result))
                } catch {
                    firstError = error
                }
            }
            PQclear(result)
        }
        if let firstError { throw firstError }
        return counts
    }

    /// Runs one statement with `$1…$n` parameters; returns the number of
    /// rows it affected.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [Value]) throws(PostgresError) -> Int {
        let result = try run(sql, parameters, binaryResults: false)
        defer { PQclear(result) }
        return Self.affected(result)
    }

    /// Runs one statement and returns its rows, each column as text (nil for
    /// NULL), or as raw bytes when `binary` (a `bytea` column's bytes).
    package func query(_ sql: String, _ parameters: [Value] = [], binary: Bool = false) throws(PostgresError) -> [[[UInt8]?]] {
        let result = try run(sql, parameters, binaryResults: binary)
        defer { PQclear(result) }
        let rows = PQntuples(result)
        let columns = PQnfields(result)
        var out: [[[UInt8]?]] = []
        out.reserveCapacity(Int(rows))
        for row in 0..<rows {
            var values: [[UInt8]?] = []
            values.reserveCapacity(Int(columns))
            for column in 0..<columns {
                if PQgetisnull(result, row, column) != 0 {
                    values.append(nil)
                } else {
                    let count = Int(PQgetlength(result, row, column))
                    let start = UnsafeRawPointer(PQgetvalue(result, row, column))
                    values.append(Array(UnsafeRawBufferPointer(start: start, count: count)))
                }
            }
            out.append(values)
        }
        return out
    }

    /// Runs one statement; returns its column type OIDs (`bytea` 17, `int8`
    /// 20, `int4` 23, `text` 25, …), its rows in text format, and the
    /// number of rows it affected.
    package func queryWithTypes(_ sql: String, _ parameters: [Value] = []) throws(PostgresError)
        -> (types: [UInt32], rows: [[[UInt8]?]], affected: Int)
    {
        let result = try run(sql, parameters, binaryResults: false)
        defer { PQclear(result) }
        let columns = PQnfields(result)
        let types = (0..<columns).map { UInt32(PQftype(result, $0)) }
        var out: [[[UInt8]?]] = []
        for row in 0..<PQntuples(result) {
            out.append(
                (0..<columns).map { column in
                    if PQgetisnull(result, row, column) != 0 { return nil }
                    let count = Int(PQgetlength(result, row, column))
                    return Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(PQgetvalue(result, row, column)), count: count))
                })
        }
        return (types, out, Self.affected(result))
    }

    /// ``query(_:_:binary:)`` with every column decoded as UTF-8 text.
    package func queryText(_ sql: String, _ parameters: [Value] = []) throws(PostgresError) -> [[String?]] {
        try query(sql, parameters).map { row in row.map { $0.map { String(decoding: $0, as: UTF8.self) } } }
    }

    /// Runs `COPY … FROM STDIN` (whose SQL is `sql`) with `data` in the
    /// format the statement names; returns the number of rows copied.
    @discardableResult
    package func copyIn(_ sql: String, data: [UInt8]) throws(PostgresError) -> Int {
        let conn = try handle()
        let start = PQexec(conn, sql)
        let status = PQresultStatus(start)
        guard status == PGRES_COPY_IN else {
            defer { PQclear(start) }
            try check(start, sql)
            throw PostgresError(.usage, "\(sql) did not start a COPY FROM STDIN")
        }
        PQclear(start)
        // libpq buffers the data; send it in chunks below its int limit.
        var offset = 0
        var sendFailed = false
        while offset < data.count && !sendFailed {
            let chunk = min(1 << 20, data.count - offset)
            let sent = data.withUnsafeBytes { raw in
                PQputCopyData(conn, raw.baseAddress!.advanced(by: offset).assumingMemoryBound(to: CChar.self), Int32(chunk))
            }
            if sent != 1 { sendFailed = true }
            offset += chunk
        }
        if sendFailed || PQputCopyEnd(conn, nil) != 1 {
            let reason = Self.message(conn)
            drainResults(conn)
            throw failure(nil, reason, sql)
        }
        var copied = 0
        var firstError: PostgresError?
        while let result = PQgetResult(conn) {
            if firstError == nil {
                do throws(PostgresError) {
                    try check(result, sql)
                    copied = Self.affected(result)
                } catch {
                    firstError = error
                }
            }
            PQclear(result)
        }
        if let firstError { throw firstError }
        return copied
    }

    // MARK: - Plumbing

    private func handle() throws(PostgresError) -> OpaquePointer {
        guard let conn else { throw PostgresError(.connection, "the PostgreSQL connection to \(displayName) is closed") }
        return conn
    }

    private func run(_ sql: String, _ parameters: [Value], binaryResults: Bool) throws(PostgresError) -> OpaquePointer? {
        let conn = try handle()
        // Parameter storage stays alive until PQexecParams returns.
        var buffers: [[UInt8]] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var isNull: [Bool] = []
        for parameter in parameters {
            switch parameter {
            case .null:
                buffers.append([]); lengths.append(0); formats.append(0); isNull.append(true)
            case .text(let text):
                var bytes = Array(text.utf8)
                bytes.append(0)
                buffers.append(bytes); lengths.append(Int32(bytes.count - 1)); formats.append(0); isNull.append(false)
            case .bytes(let bytes):
                buffers.append(bytes.isEmpty ? [0] : bytes); lengths.append(Int32(bytes.count)); formats.append(1)
                isNull.append(false)
            }
        }
        let result: OpaquePointer? = withPointers(to: buffers) { pointers in
            let values: [UnsafePointer<CChar>?] = pointers.enumerated().map { isNull[$0.offset] ? nil : $0.element }
            return values.withUnsafeBufferPointer { valuePointers in
                lengths.withUnsafeBufferPointer { lengthPointer in
                    formats.withUnsafeBufferPointer { formatPointer in
                        PQexecParams(
                            conn, sql, Int32(parameters.count), nil, valuePointers.baseAddress,
                            lengthPointer.baseAddress, formatPointer.baseAddress, binaryResults ? 1 : 0)
                    }
                }
            }
        }
        do throws(PostgresError) {
            try check(result, sql)
        } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws(PostgresError) {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_COPY_IN, PGRES_EMPTY_QUERY: return
        default:
            let reason = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
            throw failure(result, reason.isEmpty ? Self.message(conn) : reason, sql)
        }
    }

    /// An error from a failed result: `.connection` when the connection is
    /// gone (the server restarted), `.statement` with the SQLSTATE otherwise.
    private func failure(_ result: OpaquePointer?, _ reason: String, _ sql: String) -> PostgresError {
        let sqlState = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
        let text = reason.trimmed()
        let statement = String(sql.prefix(80))
        if let conn, PQstatus(conn) != CONNECTION_OK {
            return PostgresError(
                .connection, "lost the connection to PostgreSQL at \(displayName): \(text) (in: \(statement))",
                sqlState: sqlState)
        }
        return PostgresError(.statement, "\(text) (in: \(statement))", sqlState: sqlState)
    }

    private func drainResults(_ conn: OpaquePointer) {
        // Bounded: libpq returns nil once the command is complete or the connection is gone.
        for _ in 0..<16 {
            guard let result = PQgetResult(conn) else { return }
            PQclear(result)
        }
    }

    private static func affected(_ result: OpaquePointer?) -> Int {
        guard let result, let text = PQcmdTuples(result) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    private static func message(_ conn: OpaquePointer?) -> String {
        guard let conn, let text = PQerrorMessage(conn) else { return "unknown error" }
        return String(cString: text).trimmed()
    }

    /// The connection string with any password replaced by `***`.
    static func redacted(_ connection: String) -> String {
        var text = connection
        // URI form: scheme://user:password@host
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") {
            let credentials = text[scheme.upperBound..<at]
            if let colon = credentials.firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        // Keyword form and URI query: password=secret
        if let range = text.range(of: "password=") {
            let end = text[range.upperBound...].firstIndex(where: { $0 == " " || $0 == "&" }) ?? text.endIndex
            text.replaceSubrange(range.upperBound..<end, with: "***")
        }
        return text
    }
}

private extension String {
    func trimmed() -> String {
        let set = " \n"
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, set.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}

/// Calls `body` with NUL-terminated copies of `strings` (valid during the call).
private func withCStringArray<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}

/// Calls `body` with pointers to the bytes of `buffers` (valid during the call).
private func withPointers<R>(to buffers: [[UInt8]], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { bytes in
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress { UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: raw.count) }
        }
        return pointer
    }
    defer { copies.forEach { $0?.deallocate() } }
    return body(copies.map { UnsafePointer($0) })
}
