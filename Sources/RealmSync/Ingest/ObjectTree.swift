import IngestCore

/// The values of the objects a changeset builds, mutable in place while its
/// instructions apply (reference types, so a path resolves to the container
/// it changes), written as BSON at the end.
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

/// A class of the schema as objects of one changeset use it: its properties
/// with their positions, found once per class and changeset rather than by
/// name for every field.
final class ClassLayout {
    let schema: ObjectSchema
    let properties: [Property]
    let names: [String]
    let indexByName: [String: Int]
    /// The primary key's name (`_id` when the schema names none).
    let primaryKeyName: String

    init(_ schema: ObjectSchema) {
        self.schema = schema
        properties = schema.properties
        names = properties.map(\.name)
        var indexByName: [String: Int] = [:]
        indexByName.reserveCapacity(names.count)
        for (index, name) in names.enumerated() where indexByName[name] == nil { indexByName[name] = index }
        self.indexByName = indexByName
        primaryKeyName = schema.primaryKey ?? "_id"
    }
}

/// Where a field of an ``ObjectNode`` is kept.
enum FieldKey {
    /// The schema's property at this position.
    case property(Int)
    /// A field the schema does not have.
    case extra(String)
}

/// An object (top-level or embedded): its class, if the schema knows it,
/// the values of its properties by position, and the fields the schema does
/// not have in the order they were first set.
final class ObjectNode {
    let layout: ClassLayout?
    var slots: [TreeValue?]
    private(set) var extraNames: [String] = []
    private var extraValues: [String: TreeValue] = [:]
    /// Where the next property lookup starts: Realm writes an object's
    /// fields in schema order, so this is mostly the one asked for.
    private var hint = 0

    init(layout: ClassLayout?) {
        self.layout = layout
        slots = [TreeValue?](repeating: nil, count: layout?.properties.count ?? 0)
    }

    var schema: ObjectSchema? { layout?.schema }

    /// Where field `name` is kept.
    func key(_ name: String) -> FieldKey {
        guard let layout else { return .extra(name) }
        let names = layout.names
        if hint < names.count && names[hint] == name {
            hint += 1
            return .property(hint - 1)
        }
        guard let index = layout.indexByName[name] else { return .extra(name) }
        hint = index + 1
        return .property(index)
    }

    /// The property describing the field at `key`, if the schema has it.
    func property(_ key: FieldKey) -> Property? {
        guard case .property(let index) = key, let layout else { return nil }
        return layout.properties[index]
    }

    /// Whether `key` is the primary key.
    func isPrimaryKey(_ key: FieldKey) -> Bool {
        switch key {
        case .property(let index): return layout?.names[index] == (layout?.primaryKeyName ?? "_id")
        case .extra(let name): return name == (layout?.primaryKeyName ?? "_id")
        }
    }

    subscript(key: FieldKey) -> TreeValue? {
        switch key {
        case .property(let index): return slots[index]
        case .extra(let name): return extraValues[name]
        }
    }

    func set(_ key: FieldKey, _ value: TreeValue) {
        switch key {
        case .property(let index): slots[index] = value
        case .extra(let name):
            if extraValues.updateValue(value, forKey: name) == nil { extraNames.append(name) }
        }
    }

    func set(_ name: String, _ value: TreeValue) { set(key(name), value) }

    /// The fields the schema does not have, in the order first set.
    var extraFields: [(name: String, value: TreeValue)] { extraNames.map { ($0, extraValues[$0]!) } }
}

/// A BSON element's key: a field name or an array index.
enum ElementKey {
    case name(String)
    case index(Int)
}

extension BSONWriter {
    mutating func appendValue(_ key: ElementKey, _ value: BSON) {
        switch key {
        case .name(let name): appendValue(name, value)
        case .index(let index): appendValue(index: index, value)
        }
    }

    /// Starts a document or array under `key`.
    mutating func begin(_ key: ElementKey, type: BSONType) -> DocumentStart {
        switch key {
        case .name(let name): appendKey(name, type: type)
        case .index(let index): appendKey(index: index, type: type)
        }
        return beginDocument()
    }
}

extension TreeValue {
    /// Writes the value as the Swift SDK writes it: lists and sets as
    /// arrays, dictionaries as documents with sorted keys, objects as
    /// ``ObjectNode/writeFields(to:counter:)`` does.
    func write(_ key: ElementKey, to writer: inout BSONWriter, counter: inout ValueCounter) throws(RealmIngestError) {
        switch self {
        case .scalar(let value): writer.appendValue(key, value)
        case .list(let node), .set(let node):
            let start = writer.begin(key, type: .array)
            for (index, item) in node.items.enumerated() { try item.write(.index(index), to: &writer, counter: &counter) }
            writer.endDocument(start)
        case .dictionary(let node):
            let start = writer.begin(key, type: .document)
            for name in node.entries.keys.sorted() { try node.entries[name]!.write(.name(name), to: &writer, counter: &counter) }
            writer.endDocument(start)
        case .object(let node):
            let start = writer.begin(key, type: .document)
            try node.writeFields(to: &writer, counter: &counter)
            writer.endDocument(start)
        }
    }

    /// The path of the first key holding a NUL byte, in the order
    /// ``write(_:to:counter:)`` writes (BSON keys are C strings).
    func keyWithNul(path: String) -> String? {
        switch self {
        case .scalar: return nil
        case .list(let node), .set(let node):
            for (index, item) in node.items.enumerated() {
                if let found = item.keyWithNul(path: "\(path)[\(index)]") { return found }
            }
            return nil
        case .dictionary(let node):
            for name in node.entries.keys.sorted() {
                let here = "\(path).\(name)"
                if name.utf8.contains(0) { return here.debugDescription }
                if let found = node.entries[name]!.keyWithNul(path: here) { return found }
            }
            return nil
        case .object(let node): return node.keyWithNul(path: path)
        }
    }
}

extension ObjectNode {
    /// Writes the fields: the schema's properties in order (a missing
    /// optional as null, a missing collection empty; a missing required
    /// value stays missing for the validator to report), then any fields
    /// the schema does not know.
    func writeFields(to writer: inout BSONWriter, counter: inout ValueCounter) throws(RealmIngestError) {
        if let layout {
            for index in slots.indices {
                if let value = slots[index] {
                    try value.write(.name(layout.names[index]), to: &writer, counter: &counter)
                    continue
                }
                let property = layout.properties[index]
                switch property.collection {
                case .list: writer.endDocument(writer.beginArray(layout.names[index]))
                case .map: writer.endDocument(writer.beginDocument(layout.names[index]))
                case .single:
                    guard property.isOptional else { continue }
                    writer.appendNull(layout.names[index])
                }
                try counter.add(1)
            }
        }
        for name in extraNames { try extraValues[name]!.write(.name(name), to: &writer, counter: &counter) }
    }

    /// The whole object as one BSON document.
    func bsonBytes(counter: inout ValueCounter, capacity: Int) throws(RealmIngestError) -> (bytes: [UInt8], nulInKey: Bool) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(capacity)
        let nul = try BSONWriter.withWriter(appendingTo: &buffer) { (writer: inout BSONWriter) throws(RealmIngestError) -> Bool in
            let start = writer.beginDocument()
            try writeFields(to: &writer, counter: &counter)
            writer.endDocument(start)
            return writer.error != nil
        }
        return (buffer, nul)
    }

    /// The path of the first key holding a NUL byte, in write order.
    func keyWithNul(path: String) -> String? {
        var fields: [(String, TreeValue)] = []
        if let layout {
            for index in slots.indices {
                if let value = slots[index] {
                    fields.append((layout.names[index], value))
                } else if layout.names[index].utf8.contains(0) {
                    let property = layout.properties[index]
                    if property.collection != .single || property.isOptional {
                        return (path.isEmpty ? layout.names[index] : "\(path).\(layout.names[index])").debugDescription
                    }
                }
            }
        }
        fields += extraFields.map { ($0.name, $0.value) }
        for (name, value) in fields {
            let here = path.isEmpty ? name : "\(path).\(name)"
            if name.utf8.contains(0) { return here.debugDescription }
            if let found = value.keyWithNul(path: here) { return found }
        }
        return nil
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
