import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// Reads a database file with its own read-only connection, to check what was stored.
final class RawSQLite {
    private let db: SQLiteConnection

    init(_ url: URL) throws {
        db = try SQLiteConnection(path: url.path, options: .init(access: .readOnly))
    }

    /// Every row of `sql`, each value in its storage class.
    func rows(_ sql: String) throws -> [[SQLiteValue]] {
        try db.rows(sql: sql)
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
func expectLocalStoreError(
    _ code: LocalStoreError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> LocalStoreError? {
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
    static let location = ObjectSchema(
        className: "Location", kind: .embedded,
        properties: [
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

    static let counter = ObjectSchema(
        className: "Counter", kind: .topLevel,
        properties: [
            Property(name: "name", type: .string),
            Property(name: "value", type: .int),
        ])

    static func schema(_ objects: [ObjectSchema] = [task, location, counter]) throws -> Schema {
        try Schema(objects)
    }

    /// A valid Task document.
    static func task(
        _ id: ObjectId = ObjectId.generate(), title: String, priority: Int64 = 1, done: Bool = false,
        changes: [String: BSON] = [:]
    ) -> BSONDocument {
        var document: BSONDocument = [
            "_id": .objectId(id), "title": .string(title), "priority": .int64(priority), "done": .bool(done),
            "ratio": .double(0.5),
        ]
        for (key, value) in changes { document[key] = value }
        return document
    }
}
