import CSQLite
import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

/// Reads a database file with plain SQLite, to check what was stored.
final class RawSQLite {
    private var db: OpaquePointer?

    init(_ url: URL) throws {
        guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            throw LocalStoreError(.openFailed, message: "cannot open \(url.path) for inspection")
        }
    }

    deinit { sqlite3_close_v2(db) }

    /// Every row of `sql`, each value as SQLValue.
    func rows(_ sql: String) throws -> [[SQLValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw LocalStoreError(.sqlite, message: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(statement) }
        var result: [[SQLValue]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            var row: [SQLValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    let base = sqlite3_column_blob(statement, column)
                    row.append(.blob(count == 0 || base == nil ? [] : Array(UnsafeRawBufferPointer(start: base, count: count))))
                default: row.append(.null)
                }
            }
            result.append(row)
        }
        return result
    }

    /// `name → declared type` of a table's columns, and its primary key columns.
    func columns(_ table: String) throws -> (types: [String: String], primaryKey: [String]) {
        var types: [String: String] = [:]
        var key: [String] = []
        for row in try rows("PRAGMA table_info(\"\(table)\")") {
            guard case .text(let name) = row[1], case .text(let type) = row[2] else { continue }
            types[name] = type
            if case .integer(let position) = row[5], position > 0 { key.append(name) }
        }
        return (types, key)
    }
}

/// Asserts that `body` throws a LocalStoreError with `code` and returns it.
@discardableResult
func expectLocalStoreError(_ code: LocalStoreError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                           _ body: () throws -> Void) -> LocalStoreError? {
    do {
        try body()
        Issue.record("expected LocalStoreError \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as LocalStoreError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected LocalStoreError \(code), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The schemas the engine tests use.
enum LocalTestSchema {
    static let location = ObjectSchema(className: "Location", kind: .embedded, properties: [
        Property(name: "latitude", type: .double),
        Property(name: "longitude", type: .double),
    ])

    static let taskProperties: [Property] = [
        Property(name: "_id", type: .objectId, isPrimaryKey: true),
        Property(name: "title", type: .string, isIndexed: true),
        Property(name: "priority", type: .int),
        Property(name: "done", type: .bool),
        Property(name: "score", type: .double, isOptional: true),
        Property(name: "ratio", type: .float),
        Property(name: "due", type: .date, isOptional: true),
        Property(name: "note", type: .string, isOptional: true),
        Property(name: "price", type: .decimal128, isOptional: true),
        Property(name: "token", type: .uuid, isOptional: true),
        Property(name: "payload", type: .data, isOptional: true),
        Property(name: "tags", type: .string, collection: .list),
        Property(name: "labels", type: .int, collection: .map),
        Property(name: "location", type: .object, isOptional: true, objectClassName: "Location"),
        Property(name: "extra", type: .mixed, isOptional: true),
    ]

    static let task = ObjectSchema(className: "Task", kind: .topLevel, properties: taskProperties)

    static let counter = ObjectSchema(className: "Counter", kind: .topLevel, properties: [
        Property(name: "name", type: .string),
        Property(name: "value", type: .int),
    ])

    static func schema(_ objects: [ObjectSchema] = [task, location, counter]) throws -> Schema {
        try Schema(objects)
    }

    /// A valid Task document.
    static func task(_ id: ObjectId = ObjectId.generate(), title: String, priority: Int64 = 1, done: Bool = false,
                     changes: [String: BSON] = [:]) -> BSONDocument {
        var document: BSONDocument = [
            "_id": .objectId(id), "title": .string(title), "priority": .int64(priority), "done": .bool(done),
            "ratio": .double(0.5),
        ]
        for (key, value) in changes { document[key] = value }
        return document
    }
}
