import IngestCore

/// The values of the objects a changeset builds, mutable in place while its
/// instructions apply (reference types, so a path resolves to the container
/// it changes), turned into BSON at the end.
enum TreeValue {
    case scalar(BSON)
    case list(ListNode)
    case set(ListNode)
    case dictionary(DictionaryNode)
    case object(ObjectNode)
}

final class ListNode {
    var items: [TreeValue] = []
}

final class DictionaryNode {
    var entries: [String: TreeValue] = [:]
}

/// An object (top-level or embedded): its class, if the schema knows it, and
/// its fields in the order they were first set.
final class ObjectNode {
    let schema: ObjectSchema?
    var fields: [String: TreeValue] = [:]
    var order: [String] = []

    init(schema: ObjectSchema?) { self.schema = schema }

    func set(_ field: String, _ value: TreeValue) {
        if fields.updateValue(value, forKey: field) == nil { order.append(field) }
    }

    func remove(_ field: String) {
        if fields.removeValue(forKey: field) != nil { order.removeAll { $0 == field } }
    }
}

extension TreeValue {
    /// The BSON form, as the Swift SDK writes it: lists and sets as arrays,
    /// dictionaries as documents with sorted keys, objects with their schema's
    /// properties in order (a missing optional as null, a missing collection
    /// empty; a missing required value stays missing for the validator to
    /// report), then any fields the schema does not know.
    func bson(counter: inout ValueCounter) throws(RealmIngestError) -> BSON {
        switch self {
        case .scalar(let value): return value
        case .list(let node), .set(let node):
            var elements: [BSON] = []
            elements.reserveCapacity(node.items.count)
            for item in node.items { elements.append(try item.bson(counter: &counter)) }
            return .array(elements)
        case .dictionary(let node):
            var document = BSONDocument()
            document.reserveCapacity(node.entries.count)
            for key in node.entries.keys.sorted() { document.append(key, try node.entries[key]!.bson(counter: &counter)) }
            return .document(document)
        case .object(let node):
            return .document(try node.document(counter: &counter))
        }
    }
}

extension ObjectNode {
    func document(counter: inout ValueCounter) throws(RealmIngestError) -> BSONDocument {
        var document = BSONDocument()
        var written: Set<String> = []
        if let schema {
            document.reserveCapacity(schema.properties.count)
            for property in schema.properties {
                if let value = fields[property.name] {
                    document.append(property.name, try value.bson(counter: &counter))
                    written.insert(property.name)
                    continue
                }
                switch property.collection {
                case .list: document.append(property.name, .array([]))
                case .map: document.append(property.name, .document(BSONDocument()))
                case .single:
                    guard property.isOptional else { continue }
                    document.append(property.name, .null)
                }
                try counter.add(1)
                written.insert(property.name)
            }
        }
        for field in order where !written.contains(field) {
            document.append(field, try fields[field]!.bson(counter: &counter))
        }
        return document
    }
}

/// Counts the values a changeset creates, against ``ChangesetIngestor/Limits/maxValues``.
struct ValueCounter {
    let limit: Int
    private(set) var count = 0

    init(limit: Int) { self.limit = limit }

    mutating func add(_ number: Int) throws(RealmIngestError) {
        count += number
        if count > limit {
            throw RealmIngestError(.limitExceeded, message: "the changeset creates more than \(limit) values; split the transaction")
        }
    }
}
