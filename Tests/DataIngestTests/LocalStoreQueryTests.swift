import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

@Suite struct LocalStoreQueryTests {
    let directory: TemporaryDirectory
    let store: LocalStore

    init() throws {
        directory = try TemporaryDirectory("local")
        store = try LocalStore(fileURL: directory.file("query.realm"), schema: try LocalTestSchema.schema())
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        let rows: [(String, Int64, Bool, BSON, BSON)] = [
            ("Buy milk", 2, false, .double(1.5), .string("fresh")),
            ("buy bread", 1, true, .null, .null),
            ("Call Anna", 3, false, .double(7), .string("about [the] plan")),
            ("Clean desk", 1, false, .double(3), .null),
            ("Write report", 5, true, .double(10), .string("Q3")),
        ]
        try store.write { transaction in
            for (index, row) in rows.enumerated() {
                let due = BSON.datetime(Int64(base.timeIntervalSince1970 * 1000) + Int64(index) * 86_400_000)
                try transaction.insert(
                    LocalTestSchema.task(
                        title: row.0, priority: row.1, done: row.2,
                        changes: ["score": row.3, "note": row.4, "due": due]), into: "Task")
            }
        }
    }

    private func titles(_ format: String, _ arguments: Any...) throws -> [String] {
        let query = LocalQuery("Task").filter(try LocalPredicate(format: format, arguments: arguments))
        return try store.objects(query).map { row in
            guard case .string(let title)? = row.document["title"] else { return "?" }
            return title
        }
    }

    @Test func comparisonsAndLogic() throws {
        #expect(try titles("priority > 2") == ["Call Anna", "Write report"])
        #expect(try titles("priority >= %@ AND done == %@", 2, false) == ["Buy milk", "Call Anna"])
        #expect(try titles("priority == 1 || priority = 5") == ["buy bread", "Clean desk", "Write report"])
        #expect(try titles("NOT (priority < 3) and done == NO") == ["Call Anna"])
        #expect(try titles("!(done == true) AND (priority <= 1 OR priority => 3)") == ["Call Anna", "Clean desk"])
        #expect(try titles("priority IN {1, 5}") == ["buy bread", "Clean desk", "Write report"])
        #expect(try titles("priority IN %@", [2, 3]) == ["Buy milk", "Call Anna"])
        #expect(try titles("priority IN {}") == [])
        #expect(try titles("TRUEPREDICATE").count == 5)
        #expect(try titles("FALSEPREDICATE") == [])
        #expect(try titles("%K > %@", "priority", 4) == ["Write report"])
        #expect(try titles("score > 2.5") == ["Call Anna", "Clean desk", "Write report"])
        #expect(try titles("score < %@", 2) == ["Buy milk"])  // an Int for a Double property
        #expect(try titles("priority < 1.5") == ["buy bread", "Clean desk"])  // a Double for an Int property
    }

    @Test func nilComparisons() throws {
        #expect(try titles("score == nil") == ["buy bread"])
        #expect(try titles("note != NULL") == ["Buy milk", "Call Anna", "Write report"])
        #expect(try titles("note == %@", NSNull()) == ["buy bread", "Clean desk"])
        // != and NOT include objects whose value is nil.
        #expect(try titles("note != 'Q3'") == ["Buy milk", "buy bread", "Call Anna", "Clean desk"])
        #expect(try titles("NOT (note == 'Q3')") == ["Buy milk", "buy bread", "Call Anna", "Clean desk"])
        #expect(try titles("note IN {'Q3', nil}") == ["buy bread", "Clean desk", "Write report"])
    }

    @Test func stringOperators() throws {
        #expect(try titles("title BEGINSWITH 'Buy'") == ["Buy milk"])
        #expect(try titles("title BEGINSWITH[c] 'buy'") == ["Buy milk", "buy bread"])
        #expect(try titles("title ENDSWITH 'k'") == ["Buy milk", "Clean desk"])
        #expect(try titles("title ENDSWITH ''").count == 5)
        #expect(try titles("title CONTAINS 'ea'") == ["buy bread", "Clean desk"])
        #expect(try titles("title CONTAINS[c] 'B'") == ["Buy milk", "buy bread"])
        #expect(try titles("title ==[c] 'CALL ANNA'") == ["Call Anna"])
        #expect(try titles("title !=[c] 'call anna'").count == 4)
        #expect(try titles("title LIKE 'C*'") == ["Call Anna", "Clean desk"])
        #expect(try titles("title LIKE '?uy*'") == ["Buy milk", "buy bread"])
        #expect(try titles("title LIKE[c] 'b*d'") == ["buy bread"])
        #expect(try titles("note LIKE '*[the]*'") == ["Call Anna"])  // '[' is literal, not a GLOB class
        #expect(try titles("title == \"Buy milk\"") == ["Buy milk"])
        #expect(try titles("title == 'it\\'s'") == [])
    }

    @Test func datesCompareAsInstants() throws {
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(try titles("due >= %@", base.addingTimeInterval(3 * 86_400)) == ["Clean desk", "Write report"])
        #expect(try titles("due < %@", base.addingTimeInterval(0.5)) == ["Buy milk"])
    }

    @Test func sortingAndLimits() throws {
        let byPriority = LocalQuery("Task").sorted(by: "priority", ascending: false).sorted(by: "title")
        #expect(
            try store.objects(byPriority).map { $0.document["title"] }
                == ["Write report", "Call Anna", "Buy milk", "Clean desk", "buy bread"].map { BSON.string($0) })
        // Ascending puts nil first; ties keep insertion order.
        #expect(
            try store.objects(LocalQuery("Task").sorted(by: "score")).map { $0.document["title"] }
                == ["buy bread", "Buy milk", "Clean desk", "Call Anna", "Write report"].map { BSON.string($0) })
        let top = try LocalQuery("Task").filter("done == false").sorted(by: "priority", ascending: false).limit(2)
        #expect(try store.objects(top).map { $0.document["title"] } == [.string("Call Anna"), .string("Buy milk")])
        #expect(try store.count(top) == 2)
        #expect(try store.count(try LocalQuery("Task").filter("done == false")) == 3)
        #expect(try store.count(LocalQuery("Task")) == 5)
    }

    @Test func predicateErrorsSayWhatIsWrong() throws {
        func message(_ format: String, _ arguments: Any...) -> String? {
            expectLocalStoreError(.invalidPredicate) {
                _ = try store.objects(LocalQuery("Task").filter(try LocalPredicate(format: format, arguments: arguments)))
            }?.message
        }
        #expect(
            message("title ==")
                == "invalid predicate \"title ==\" at character 8: expected a value but found the end of the predicate; quote text ('text') or pass it as %@"
        )
        #expect(
            message("title == %@")
                == "invalid predicate \"title == %@\" at character 9: the predicate uses more placeholders than the 0 arguments given; pass one argument per %@ or %K"
        )
        #expect(
            message("title == %@", "a", "b")
                == "invalid predicate \"title == %@\" at character 11: 2 arguments were given but the predicate uses 1; remove the extra arguments or add %@ placeholders"
        )
        #expect(
            message("(priority > 1")
                == "invalid predicate \"(priority > 1\" at character 13: expected ')' but found the end of the predicate")
        #expect(message("priority ~ 1") == "invalid predicate \"priority ~ 1\" at character 9: unexpected character '~'")
        #expect(message("title == 'open") == "invalid predicate \"title == 'open\" at character 9: the string is not closed; end it with '")
        #expect(
            message("priority IN 3")
                == "invalid predicate \"priority IN 3\" at character 13: IN needs a list: write 'priority IN {1, 2}' or pass an array for %@"
        )
        #expect(
            message("priority == %@", "high")
                == "Task.priority has type int but the predicate compares it with a string; pass a value of the property's type")
        #expect(message("done > true") == "Task.done has type bool: only ==, != and IN apply to it, not >")
        #expect(message("priority CONTAINS 1") == "Task.priority has type int: CONTAINS applies to String properties only")
        #expect(
            message("title ==[d] 'x'")
                == "invalid predicate \"title ==[d] 'x'\" at character 8: the modifier [d] is not supported; only [c] (case-insensitive) is"
        )
        #expect(message("score < nil") == "Task.score < nil: nil can only be compared with == or !=")
        let deep = String(repeating: "(", count: 100) + "done == true" + String(repeating: ")", count: 100)
        #expect(message(deep)?.contains("nested more than 64 levels") == true)
    }

    @Test func propertiesAreCheckedAgainstTheSchema() throws {
        func error(_ format: String, _ arguments: Any...) -> LocalStoreError? {
            expectLocalStoreError(.invalidProperty) {
                _ = try store.objects(LocalQuery("Task").filter(try LocalPredicate(format: format, arguments: arguments)))
            }
        }
        #expect(
            error("colour == 'red'")?.message
                == "Task has no property 'colour' to use in a predicate; its properties are _id, title, priority, done, score, ratio, due, note, price, token, payload, tags, labels, location, extra"
        )
        #expect(
            error("tags == 'home'")?.message
                == "Task.tags has type List<string>, stored as BSON, and cannot be used in a predicate; use the class's scalar properties")
        #expect(
            error("location.latitude > 3")?.message
                == "Task: 'location.latitude' looks into an embedded object or link; a predicate works on the class's own scalar properties only"
        )
        let sort = expectLocalStoreError(.invalidProperty) { _ = try store.objects(LocalQuery("Task").sorted(by: "nope")) }
        #expect(sort?.message.hasPrefix("Task has no property 'nope' to use in sorting") == true)
    }

    @Test func injectionAttemptsStayValues() throws {
        let attacks = ["x' OR '1'='1", "'; DROP TABLE Task; --", "\") OR 1=1 --", "Buy milk' --"]
        for attack in attacks {
            #expect(try titles("title == %@", attack) == [])
            #expect(try titles("title CONTAINS %@", attack) == [])
            #expect(try titles("note LIKE %@", attack) == [])
        }
        // A literal in the predicate string is a value too.
        #expect(try titles("title == 'x\\' OR 1=1 --'") == [])
        // %K names are checked against the schema, never spliced.
        let injected = expectLocalStoreError(.invalidProperty) {
            _ = try titles("%K == 1", "priority\" = 1 OR \"1")
        }
        #expect(injected?.propertyName == "priority\" = 1 OR \"1")
        // The table is intact and the value round-trips as stored text.
        try store.write { try $0.insert(LocalTestSchema.task(title: attacks[1]), into: "Task") }
        #expect(try titles("title == %@", attacks[1]) == [attacks[1]])
        #expect(try store.count(LocalQuery("Task")) == 6)
    }

    @Test func primaryKeyTypes() throws {
        let byString = ObjectSchema(
            className: "Setting", kind: .topLevel,
            properties: [
                Property(name: "key", type: .string, isPrimaryKey: true), Property(name: "value", type: .string),
            ])
        let byInt = ObjectSchema(
            className: "Page", kind: .topLevel,
            properties: [
                Property(name: "number", type: .int, isPrimaryKey: true), Property(name: "text", type: .string),
            ])
        let byUUID = ObjectSchema(
            className: "Device", kind: .topLevel,
            properties: [
                Property(name: "_id", type: .uuid, isPrimaryKey: true),
                Property(name: "owner", type: .object, isOptional: true, objectClassName: "Setting"),
            ])
        let other = try LocalStore(fileURL: directory.file("keys.realm"), schema: try Schema([byString, byInt, byUUID]))
        let uuid = UUID()
        let uuidBSON = BSON.localArgument(uuid)!
        try other.write { transaction in
            try transaction.insert(["key": .string("theme"), "value": .string("dark")], into: "Setting")
            try transaction.insert(["number": .int64(7), "text": .string("seven")], into: "Page")
            try transaction.insert(["_id": uuidBSON, "owner": .string("theme")], into: "Device")
        }
        #expect(try other.object("Setting", primaryKey: .string("theme"))?.document["value"] == .string("dark"))
        #expect(try other.object("Page", primaryKey: .int32(7))?.document["text"] == .string("seven"))
        #expect(try other.object("Device", primaryKey: uuidBSON)?.document["owner"] == .string("theme"))
        // A link compares by the target's primary key.
        #expect(try other.count(try LocalQuery("Device").filter("owner == %@", "theme")) == 1)
        #expect(try other.count(try LocalQuery("Device").filter("_id == %@", uuid)) == 1)
        other.close()
    }
}
