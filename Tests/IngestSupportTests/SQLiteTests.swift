import CSQLite
import Foundation
import Testing
@testable import IngestSupport

/// The one SQLite layer on its own: opening, typed binding and reading,
/// the statement cache, WAL, transactions and the error's codes.
@Suite struct SQLiteTests {
    /// A temporary directory for one test, removed when it ends.
    final class Directory {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-test-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        func file(_ name: String) -> String { path + "/" + name }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    func expectError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> SQLiteError? {
        do {
            try body()
            Issue.record("no error", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error is SQLiteError, sourceLocation: sourceLocation)
            return error as? SQLiteError
        }
    }

    @Test func valuesRoundTripInTheirStorageClass() throws {
        let directory = try Directory()
        let db = try SQLiteConnection(path: directory.file("values.sqlite"))
        try db.execute(sql: "CREATE TABLE t (v)")
        let values: [SQLiteValue] = [
            .null, .integer(Int64.min), .integer(Int64.max), .real(-0.5), .text(""), .text("a\u{0}b é😀"),
            .blob([]), .blob([0, 1, 255]),
        ]
        for value in values { try db.run(sql: "INSERT INTO t (v) VALUES (?)", arguments: [value]) }
        #expect(try db.rows(sql: "SELECT v FROM t ORDER BY rowid").map { $0[0] } == values)
        // An empty text is text and an empty blob a blob, not NULL.
        #expect(
            try db.rows(sql: "SELECT typeof(v) FROM t ORDER BY rowid").map { $0[0] }
                == ["null", "integer", "integer", "real", "text", "text", "blob", "blob"].map { .text($0) })
        #expect(try db.rows(sql: "SELECT length(CAST(v AS BLOB)) FROM t WHERE rowid = 6") == [[.integer(10)]])
        #expect(db.lastInsertRowID == 8)
        #expect(try db.run(sql: "DELETE FROM t WHERE v IS NULL") == 1)
    }

    @Test func typedBindingAndReading() throws {
        let directory = try Directory()
        let db = try SQLiteConnection(path: directory.file("typed.sqlite"))
        try db.execute(sql: "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)")
        let insert = try db.cachedStatement(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)")
        try insert.bind(Int64(42), at: 1)
        try insert.bind(2.5, at: 2)
        let bytes: [UInt8] = Array("borrowed".utf8)
        try bytes.withUnsafeBytes { raw in
            try insert.bind(borrowedText: raw, at: 3)
            try insert.bind(borrowedBlob: UnsafeRawBufferPointer(rebasing: raw[0..<3]), at: 4)
            #expect(try insert.step() == false)
        }
        insert.reset()
        let select = try db.makeStatement(sql: "SELECT i, r, s, b, n FROM t")
        #expect(try select.step())
        #expect(select.columnCount == 5)
        #expect(select.columnType(at: 0) == .integer && select.int64(at: 0) == 42)
        #expect(select.columnType(at: 1) == .real && select.double(at: 1) == 2.5)
        #expect(select.columnType(at: 2) == .text && select.text(at: 2) == "borrowed")
        #expect(select.columnType(at: 3) == .blob && select.blob(at: 3) == Array("bor".utf8))
        #expect(select.columnType(at: 4) == .null && select.text(at: 4) == "" && select.int64(at: 4) == 0)
        // SQLite converts on request: the integer as text.
        #expect(select.text(at: 0) == "42")
        #expect(select.row() == [.integer(42), .real(2.5), .text("borrowed"), .blob(Array("bor".utf8)), .null])
        #expect(try select.step() == false)
    }

    @Test func cachedStatementsAreResetAndBounded() throws {
        let directory = try Directory()
        let db = try SQLiteConnection(path: directory.file("cache.sqlite"), options: .init(statementCacheLimit: 2))
        let first = try db.cachedStatement(sql: "SELECT ?")
        try first.bind(Int64(7), at: 1)
        #expect(try first.step() && first.int64(at: 0) == 7)
        // The same statement comes back reset, its parameter unbound (NULL).
        let again = try db.cachedStatement(sql: "SELECT ?")
        #expect(again === first)
        #expect(try again.step() && again.columnType(at: 0) == .null)
        // Filling the cache empties it; a statement still held stays usable.
        _ = try db.cachedStatement(sql: "SELECT 2")
        _ = try db.cachedStatement(sql: "SELECT 3")
        #expect(try db.cachedStatement(sql: "SELECT ?") !== first)
        first.reset()
        try first.bind(Int64(8), at: 1)
        #expect(try first.step() && first.int64(at: 0) == 8)
        db.forgetStatement(sql: "SELECT ?")
    }

    @Test func errorsCarryTheCodesTheSQLAndTheFile() throws {
        let directory = try Directory()
        let path = directory.file("errors.sqlite")
        let db = try SQLiteConnection(path: path)
        try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
        try db.run(sql: "INSERT INTO t (id, name) VALUES (1, 'a')")

        let duplicate = expectError { try db.run(sql: "INSERT INTO t (id, name) VALUES (1, 'b')") }
        #expect(duplicate?.operation == .step)
        #expect(duplicate?.resultCode == SQLITE_CONSTRAINT && duplicate?.isConstraint == true)
        #expect(duplicate?.extendedResultCode == 1555)  // SQLITE_CONSTRAINT_PRIMARYKEY
        #expect(duplicate?.sql == "INSERT INTO t (id, name) VALUES (1, 'b')")
        #expect(duplicate?.path == path)
        #expect(duplicate?.message.contains("UNIQUE constraint failed: t.id") == true)
        #expect(expectError { try db.run(sql: "INSERT INTO t (id, name) VALUES (2, 'a')") }?.extendedResultCode == 2067)

        let syntax = expectError { _ = try db.rows(sql: "SELEC 1") }
        #expect(syntax?.operation == .prepare && syntax?.resultCode == SQLITE_ERROR)
        #expect(syntax?.description.contains("(in: SELEC 1)") == true)
        #expect(expectError { try db.execute(sql: "CREATE TABLE t (x)") }?.operation == .execute)
        let range = expectError { try db.makeStatement(sql: "SELECT ?").bind(Int64(1), at: 2) }
        #expect(range?.operation == .bind(parameter: 2) && range?.resultCode == SQLITE_RANGE)

        let missing = expectError {
            _ = try SQLiteConnection(path: directory.file("absent/x.sqlite"))
        }
        #expect(missing?.operation == .open && missing?.resultCode == SQLITE_CANTOPEN)

        let readOnly = try SQLiteConnection(path: path, options: .init(access: .readOnly))
        #expect(expectError { try readOnly.run(sql: "DELETE FROM t") }?.resultCode == SQLITE_READONLY)
        #expect(
            expectError { _ = try SQLiteConnection(path: directory.file("new.sqlite"), options: .init(access: .readWrite)) }?
                .resultCode == SQLITE_CANTOPEN)
    }

    @Test func closeReleasesTheCacheAndLaterCallsThrow() throws {
        let directory = try Directory()
        let db = try SQLiteConnection(path: directory.file("close.sqlite"))
        let held = try db.cachedStatement(sql: "SELECT 1")
        db.close()
        db.close()
        #expect(!db.isOpen)
        #expect(expectError { try db.execute(sql: "SELECT 1") }?.operation == .closed)
        #expect(expectError { _ = try db.cachedStatement(sql: "SELECT 1") }?.operation == .closed)
        #expect(db.changes == 0 && !db.isInTransaction)
        // A statement still held keeps the closed connection's memory
        // (sqlite3_close_v2) until it is released: it never dangles.
        #expect(try held.step() && held.int64(at: 0) == 1)
    }

    @Test func walIsCheckedAfterThePragma() throws {
        let directory = try Directory()
        let db = try SQLiteConnection(path: directory.file("wal.sqlite"))
        let wal = try db.enableWAL()
        #expect(wal.enabled && wal.journalMode == "wal")
        // An in-memory database cannot use WAL: the pragma answers with the mode it kept.
        let memory = try SQLiteConnection(path: ":memory:")
        let refused = try memory.enableWAL()
        #expect(!refused.enabled && refused.journalMode == "memory")
    }

    struct Failure: Error, Equatable { var text: String }

    @Test func transactionsCommitOrRollBack() throws {
        let directory = try Directory()
        let db = try SQLiteConnection(path: directory.file("tx.sqlite"))
        try db.execute(sql: "CREATE TABLE t (x)")
        let map: (SQLiteError) -> Failure = { Failure(text: $0.message) }
        let value = try db.transaction(.immediate, mapError: map) { () throws(Failure) in
            do throws(SQLiteError) { try db.run(sql: "INSERT INTO t VALUES (1)") } catch { throw map(error) }
            #expect(db.isInTransaction)
            return 5
        }
        #expect(value == 5 && !db.isInTransaction)
        #expect(throws: Failure(text: "no")) {
            try db.transaction(mapError: map) { () throws(Failure) in
                do throws(SQLiteError) { try db.run(sql: "INSERT INTO t VALUES (2)") } catch { throw map(error) }
                throw Failure(text: "no")
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.rows(sql: "SELECT x FROM t") == [[.integer(1)]])
        // BEGIN inside a transaction: SQLite's error, mapped.
        try db.begin()
        #expect(throws: Failure(text: "cannot start a transaction within a transaction")) {
            try db.transaction(mapError: map) { () throws(Failure) in }
        }
        db.rollback()
        db.rollback()
        #expect(!db.isInTransaction)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLockHeldElsewhereIsBusyAfterTheTimeout() throws {
        let directory = try Directory()
        let path = directory.file("busy.sqlite")
        let holder = try SQLiteConnection(path: path)
        #expect(try holder.enableWAL().enabled)
        try holder.execute(sql: "CREATE TABLE t (x)")
        try holder.begin(.immediate)
        let other = try SQLiteConnection(path: path, options: .init(busyTimeoutMilliseconds: 50))
        let started = Date()
        let busy = expectError { try other.begin(.immediate) }
        #expect(busy?.isBusy == true && busy?.resultCode == SQLITE_BUSY)
        #expect(Date().timeIntervalSince(started) >= 0.04)
        // WAL readers are not blocked by the writer.
        #expect(try other.rows(sql: "SELECT count(*) FROM t") == [[.integer(0)]])
        holder.rollback()
        try other.begin(.immediate)
        try other.commit()
    }
}
