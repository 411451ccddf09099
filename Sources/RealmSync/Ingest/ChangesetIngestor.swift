import Foundation
import IngestCore

/// Turns the changesets of an upload into the documents their objects make,
/// one changeset (one client transaction) at a time.
///
/// Each changeset is decoded and applied to objects it creates itself:
/// asymmetric objects exist only within the transaction that creates them,
/// so every instruction must touch an object that a `CreateObject` earlier
/// in the same changeset made. The values become the BSON types the Swift
/// SDK writes for the same schema (see Docs/DataModel.md): int as int64,
/// float widened to double, binary as subtype 0, UUID as subtype 4, a
/// timestamp as whole milliseconds (rounded down), a link as the target's
/// primary key, embedded objects as documents, lists and sets as arrays,
/// dictionaries as documents with sorted keys; a property the changeset
/// never sets is null (optional), empty (list, map) or left out (required:
/// the schema validator then reports it).
///
/// Schema instructions are checked against ``schema``: in
/// ``SchemaMode/fixed`` every table and column must already be there, as
/// declared; in ``SchemaMode/development`` new ones are added (see
/// ``RealmSchemaBuilder``). Writes to a table that is not asymmetric are
/// ``RealmIngestError/Code/notAsymmetric``: this server accepts asymmetric
/// data only.
///
/// Bounds: the decoder's limits (path length, value sizes), and at most
/// ``Limits/maxValues`` values per changeset, defaults included.
///
/// ```swift
/// var ingestor = ChangesetIngestor(schema: appSchema)
/// for changeset in try upload.changesets() {
///     let result = try ingestor.ingest(changeset.data)
///     for object in result.objects { print(object.document) }
/// }
/// ```
public struct ChangesetIngestor: Sendable {
    /// How schema instructions are treated.
    public enum SchemaMode: Sendable, Hashable {
        /// Tables and columns must be in the schema already (an app with a
        /// configured schema).
        case fixed
        /// New tables and columns are added to the schema (development mode).
        case development
    }

    /// Limits against hostile changesets.
    public struct Limits: Sendable, Hashable {
        /// The most values (fields, elements, defaults) one changeset may
        /// create. Default 1,000,000.
        public var maxValues: Int
        /// The decoder's limits.
        public var decoder: ChangesetDecoder.Limits

        /// Creates limits; every argument has a documented default.
        public init(maxValues: Int = 1_000_000, decoder: ChangesetDecoder.Limits = ChangesetDecoder.Limits()) {
            self.maxValues = maxValues
            self.decoder = decoder
        }
    }

    /// The schema objects are built against (grown in development mode).
    public private(set) var schema: Schema
    /// How schema instructions are treated.
    public let schemaMode: SchemaMode
    /// The limits in force.
    public let limits: Limits
    private var builder: RealmSchemaBuilder

    /// An ingestor for an app with `schema`.
    public init(schema: Schema, schemaMode: SchemaMode = .fixed, limits: Limits = Limits()) {
        self.schema = schema
        self.schemaMode = schemaMode
        self.limits = limits
        builder = RealmSchemaBuilder(base: schema, allowsAdditions: schemaMode == .development)
    }

    /// The objects one encoded changeset creates.
    /// - Throws: ``RealmIngestError``; nothing of the changeset may be stored.
    public mutating func ingest(_ changeset: [UInt8]) throws(RealmIngestError) -> ChangesetIngestResult {
        var decoder = ChangesetDecoder(changeset, limits: limits.decoder)
        return try run { () throws(RealmIngestError) -> Instruction? in
            do throws(ChangesetError) { return try decoder.next() } catch {
                throw RealmIngestError(.badChangeset, changesetError: error, message: "the changeset does not decode: \(error)")
            }
        }
    }

    /// The objects a decoded changeset creates (see ``ingest(_:)``).
    public mutating func ingest(instructions: [Instruction]) throws(RealmIngestError) -> ChangesetIngestResult {
        var iterator = instructions.makeIterator()
        return try run { iterator.next() }
    }

    /// Applies the instructions `next` hands out, in order, until it returns nil.
    private mutating func run(_ next: () throws(RealmIngestError) -> Instruction?) throws(RealmIngestError) -> ChangesetIngestResult {
        var build = ObjectBuild(schema: schema, limit: limits.maxValues)
        var schemaChanged = false
        while let instruction = try next() {
            if try applySchema(instruction, changed: &schemaChanged) {
                build.schemaChanged(schema)
                continue
            }
            try build.apply(instruction)
        }
        var result = try build.finish()
        result.schemaChanged = schemaChanged
        return result
    }

    private mutating func applySchema(_ instruction: Instruction, changed: inout Bool) throws(RealmIngestError) -> Bool {
        let before = builder.additions
        guard try builder.apply(instruction) else { return false }
        if builder.additions != before {
            changed = true
            schema = try builder.schema()
        }
        return true
    }
}

/// The objects of one changeset while its instructions apply.
struct ObjectBuild {
    var schema: Schema
    private var counter: ValueCounter
    private struct Key: Hashable {
        var table: String
        var object: PrimaryKey
    }
    private var objects: [Key: ObjectNode] = [:]
    private var order: [Key] = []
    private var problems: [Key: String] = [:]
    /// The classes objects were made of, each laid out once per changeset
    /// (and again after a schema change).
    private var layouts: [String: ClassLayout] = [:]
    /// The object the last instruction touched: a changeset sets one
    /// object's fields one after another, so this saves a hash lookup per field.
    private var last: (table: String, object: PrimaryKey, node: ObjectNode)?

    init(schema: Schema, limit: Int) {
        self.schema = schema
        counter = ValueCounter(limit: limit)
    }

    /// Replaces the schema (after a schema instruction); objects already made keep their class's old layout.
    mutating func schemaChanged(_ schema: Schema) {
        self.schema = schema
        layouts = [:]
    }

    private mutating func layout(of objectSchema: ObjectSchema) -> ClassLayout {
        if let layout = layouts[objectSchema.className] { return layout }
        let layout = ClassLayout(objectSchema)
        layouts[objectSchema.className] = layout
        return layout
    }

    mutating func apply(_ instruction: Instruction) throws(RealmIngestError) {
        switch instruction {
        case .internString, .addTable, .addColumn, .eraseTable, .eraseColumn:
            return
        case .createObject(let table, let object):
            try create(table, object)
        case .eraseObject(let table, let object):
            let key = Key(table: table, object: object)
            if objects[key] != nil {
                objects[key] = nil
                last = nil
                order.removeAll { $0 == key }
                problems[key] = nil
                return
            }
            // An asymmetric object is immutable once stored: erasing one that
            // this changeset did not create changes nothing here.
            _ = try objectSchema(of: table, for: "erase an object in")
        case .update(let update):
            try self.update(update)
        case .addInteger(let path, let value):
            try addInteger(path, value)
        case .arrayInsert(let path, let value, let priorSize):
            let (list, index, context) = try listElement(path, priorSize: priorSize, what: "ArrayInsert")
            guard index <= list.items.count else {
                throw invalid(path, "ArrayInsert at index \(index) of a list of \(list.items.count)")
            }
            list.items.insert(try convert(value, context, path), at: index)
        case .arrayMove(let path, let newIndex, let priorSize):
            let (list, index, _) = try listElement(path, priorSize: priorSize, what: "ArrayMove")
            guard index < list.items.count, Int(newIndex) < list.items.count else {
                throw invalid(path, "ArrayMove from \(index) to \(newIndex) in a list of \(list.items.count)")
            }
            let item = list.items.remove(at: index)
            list.items.insert(item, at: Int(newIndex))
        case .arrayErase(let path, let priorSize):
            let (list, index, _) = try listElement(path, priorSize: priorSize, what: "ArrayErase")
            guard index < list.items.count else {
                throw invalid(path, "ArrayErase at index \(index) of a list of \(list.items.count)")
            }
            list.items.remove(at: index)
        case .clear(let path, _):
            let (location, context) = try resolve(path, count: path.path.count)
            switch try existingOrNew(location, context, path) {
            case .list(let list), .set(let list): list.items.removeAll()
            case .dictionary(let dictionary): dictionary.entries.removeAll()
            default: throw invalid(path, "Clear on a value that is not a collection")
            }
        case .setInsert(let path, let value), .setErase(let path, let value):
            let (location, context) = try resolve(path, count: path.path.count)
            switch try existingOrNew(location, context, path) {
            case .list(let set), .set(let set):
                try setChange(set, insert: instruction.code == 12, value, context, path)
            default:
                throw invalid(path, "a set instruction on a value that is not a set")
            }
        }
    }

    func finish() throws(RealmIngestError) -> ChangesetIngestResult {
        var counter = self.counter
        var result = ChangesetIngestResult()
        result.objects.reserveCapacity(order.count)
        var capacity = 256
        for key in order {
            guard let node = objects[key] else { continue }
            if let reason = problems[key] {
                result.rejected.append(RejectedObject(className: key.table, primaryKey: key.object, reason: reason))
                continue
            }
            // Sized like the one before it: objects of a changeset are mostly alike.
            let (bytes, nulInKey) = try node.bsonBytes(counter: &counter, capacity: capacity)
            if nulInKey {
                let path = node.keyWithNul(path: "") ?? "a key"
                result.rejected.append(
                    RejectedObject(
                        className: key.table, primaryKey: key.object,
                        reason: "\(path): a field name or map key with a NUL byte, which BSON cannot store"))
                continue
            }
            capacity = bytes.count
            result.objects.append(IngestedObject(className: key.table, primaryKey: key.object, bson: bytes))
        }
        return result
    }

    // MARK: Objects

    private func objectSchema(of table: String, for action: String) throws(RealmIngestError) -> ObjectSchema {
        guard let object = schema[table] else {
            throw RealmIngestError(
                .invalidSchemaChange, table: table,
                message:
                    "the changeset writes to the class \(table), which the schema does not have; declare it in the app's schema (or use development mode)"
            )
        }
        switch object.kind {
        case .asymmetric:
            return object
        case .topLevel:
            throw RealmIngestError(
                .notAsymmetric, table: table,
                message:
                    "the client tries to \(action) \(table), a class that is not asymmetric; this server accepts asymmetric data only (AsymmetricObject), not bidirectional sync"
            )
        case .embedded:
            throw RealmIngestError(
                .invalidInstruction, table: table,
                message: "the changeset tries to \(action) the embedded class \(table) directly")
        }
    }

    private mutating func create(_ table: String, _ object: PrimaryKey) throws(RealmIngestError) {
        let key = Key(table: table, object: object)
        guard objects[key] == nil else { return }  // CreateObject on an existing object changes nothing
        let objectSchema = try objectSchema(of: table, for: "create an object in")
        let layout = layout(of: objectSchema)
        let node = ObjectNode(layout: layout)
        switch object {
        case .globalKey:
            throw RealmIngestError(.invalidInstruction, table: table, message: "an object of \(table) has a GlobalKey, not a primary key")
        default:
            node.set(layout.primaryKeyName, .scalar(Self.bson(object)))
        }
        try counter.add(1)
        objects[key] = node
        order.append(key)
        last = (table, object, node)
    }

    private mutating func root(_ path: ObjectPath) throws(RealmIngestError) -> ObjectNode {
        if let last, last.object == path.object, last.table == path.table { return last.node }
        if let node = objects[Key(table: path.table, object: path.object)] {
            last = (path.table, path.object, node)
            return node
        }
        let objectSchema = try objectSchema(of: path.table, for: "change an object of")
        throw RealmIngestError(
            .invalidInstruction, table: path.table, field: path.field,
            message:
                "the changeset changes \(objectSchema.className).\(path.field) of an object it did not create; asymmetric objects are written once"
        )
    }

    // MARK: Paths

    private enum Location {
        case field(ObjectNode, FieldKey)
        case element(ListNode, Int)
        case entry(DictionaryNode, String)
    }

    private func invalid(_ path: ObjectPath, _ message: String) -> RealmIngestError {
        RealmIngestError(.invalidInstruction, table: path.table, field: path.field, message: "\(path.table).\(path.field): \(message)")
    }

    /// The location of `path.field` followed by the first `count` path
    /// elements, and the property that describes the value there.
    private mutating func resolve(_ path: ObjectPath, count: Int) throws(RealmIngestError) -> (Location, Property?) {
        let node = try root(path)
        let key = node.key(path.field)
        var location = Location.field(node, key)
        var context = node.property(key)
        for element in path.path.prefix(count) {
            let value = try existingOrNew(location, context, path)
            switch (element, value) {
            case (.index(let index), .list(let list)), (.index(let index), .set(let list)):
                guard Int(index) < list.items.count else {
                    throw invalid(path, "index \(index) in a list of \(list.items.count)")
                }
                location = .element(list, Int(index))
            case (.key(let key), .dictionary(let dictionary)):
                location = .entry(dictionary, key)
            case (.key(let name), .object(let object)):
                let key = object.key(name)
                location = .field(object, key)
                context = object.property(key)
            default:
                throw invalid(path, "the path does not lead to a value")
            }
        }
        return (location, context)
    }

    private func value(at location: Location) -> TreeValue? {
        switch location {
        case .field(let node, let key): return node[key]
        case .element(let list, let index): return list.items[index]
        case .entry(let dictionary, let key): return dictionary.entries[key]
        }
    }

    private func store(_ value: TreeValue, at location: Location) {
        switch location {
        case .field(let node, let key): node.set(key, value)
        case .element(let list, let index): list.items[index] = value
        case .entry(let dictionary, let key): dictionary.entries[key] = value
        }
    }

    /// The value at `location`; a collection field never set is created
    /// empty (Realm sends no instruction for an empty collection).
    private mutating func existingOrNew(_ location: Location, _ context: Property?, _ path: ObjectPath) throws(RealmIngestError)
        -> TreeValue
    {
        if let value = value(at: location) { return value }
        guard case .field = location, let context else { throw invalid(path, "the path leads to nothing") }
        let created: TreeValue
        switch context.collection {
        case .list: created = .list(ListNode())
        case .map: created = .dictionary(DictionaryNode())
        case .single: throw invalid(path, "the path leads into a value that was never set")
        }
        try counter.add(1)
        store(created, at: location)
        return created
    }

    private mutating func listElement(_ path: ObjectPath, priorSize: UInt32, what: String) throws(RealmIngestError) -> (
        ListNode, Int, Property?
    ) {
        guard case .index(let index)? = path.path.last else { throw invalid(path, "\(what) without a list index") }
        let (location, context) = try resolve(path, count: path.path.count - 1)
        let list: ListNode
        switch try existingOrNew(location, context, path) {
        case .list(let node), .set(let node): list = node
        default: throw invalid(path, "\(what) on a value that is not a list")
        }
        guard Int(priorSize) == list.items.count else {
            throw invalid(path, "\(what) with prior size \(priorSize) on a list of \(list.items.count)")
        }
        return (list, Int(index), context)
    }

    // MARK: Instructions

    private mutating func update(_ update: Update) throws(RealmIngestError) {
        let path = update.path
        let node = try root(path)
        if path.path.isEmpty {
            let key = node.key(path.field)
            if node.isPrimaryKey(key) { throw invalid(path, "an Update of the primary key") }
            if case .erased = update.value { throw invalid(path, "Erased on a field") }
            node.set(key, try convert(update.value, node.property(key), path))
            return
        }
        let (parentLocation, parentContext) = try resolve(path, count: path.path.count - 1)
        let parent = try existingOrNew(parentLocation, parentContext, path)
        switch (path.path.last!, parent) {
        case (.index(let index), .list(let list)), (.index(let index), .set(let list)):
            guard Int(update.priorSize) == list.items.count, Int(index) < list.items.count else {
                throw invalid(path, "an Update of index \(index), prior size \(update.priorSize), in a list of \(list.items.count)")
            }
            if case .erased = update.value { throw invalid(path, "Erased on a list element") }
            list.items[Int(index)] = try convert(update.value, parentContext, path)
        case (.key(let key), .dictionary(let dictionary)):
            if case .erased = update.value {
                dictionary.entries[key] = nil
            } else {
                dictionary.entries[key] = try convert(update.value, parentContext, path)
            }
        case (.key(let name), .object(let object)):
            if case .erased = update.value { throw invalid(path, "Erased on an embedded object's field") }
            let key = object.key(name)
            object.set(key, try convert(update.value, object.property(key), path))
        default:
            throw invalid(path, "the path does not lead to a value")
        }
    }

    private mutating func addInteger(_ path: ObjectPath, _ delta: Int64) throws(RealmIngestError) {
        let (location, context) = try resolve(path, count: path.path.count)
        switch value(at: location) {
        case .scalar(.int64(let number))?:
            store(.scalar(.int64(number &+ delta)), at: location)
        case .scalar(.null)?:
            return  // adding to null leaves null, as in realm-core
        case nil where context?.type == .int && context?.collection == .single:
            try counter.add(1)
            store(.scalar(.int64(delta)), at: location)  // the unset int is 0
        default:
            throw invalid(path, "AddInteger on a value that is not an integer")
        }
    }

    private mutating func setChange(
        _ set: ListNode, insert: Bool, _ value: Payload, _ context: Property?,
        _ path: ObjectPath
    ) throws(RealmIngestError) {
        let element = try convert(value, context, path)
        guard case .scalar(let scalar) = element else { throw invalid(path, "a set element that is not a value") }
        let position = set.items.firstIndex { if case .scalar(let other) = $0 { return other == scalar } else { return false } }
        if insert {
            if position == nil { set.items.append(element) }
        } else if let position {
            set.items.remove(at: position)
        }
    }

    // MARK: Values

    /// The tree value of a payload placed where `context` describes.
    private mutating func convert(_ payload: Payload, _ context: Property?, _ path: ObjectPath) throws(RealmIngestError) -> TreeValue {
        try counter.add(1)
        switch payload {
        case .objectValue:
            guard let context else { return .object(ObjectNode(layout: nil)) }
            guard context.type == .object, let target = context.objectClassName, let targetSchema = schema[target],
                targetSchema.kind == .embedded
            else {
                throw invalid(path, "an embedded object where the schema has \(context.typeDescription)")
            }
            return .object(ObjectNode(layout: layout(of: targetSchema)))
        case .list: return .list(ListNode())
        case .set: return .set(ListNode())
        case .dictionary: return .dictionary(DictionaryNode())
        case .erased: throw invalid(path, "Erased outside a dictionary")
        case .null: return .scalar(.null)
        case .int(let number): return .scalar(.int64(number))
        case .bool(let flag): return .scalar(.bool(flag))
        case .string(let text): return .scalar(.string(text))
        case .binary(let bytes): return .scalar(.binary(BSONBinary(subtype: BSONBinary.Subtype.generic, bytes: bytes)))
        case .timestamp(let seconds, let nanoseconds):
            let (millis, remainder) = Int64(nanoseconds).quotientAndRemainder(dividingBy: 1_000_000)
            let (scaled, overflow1) = seconds.multipliedReportingOverflow(by: 1000)
            let (sum, overflow2) = scaled.addingReportingOverflow(remainder < 0 ? millis - 1 : millis)
            guard !overflow1 && !overflow2 else {
                problems[Key(table: path.table, object: path.object)] =
                    problems[Key(table: path.table, object: path.object)]
                    ?? "\(path.field): the date \(seconds) s after 1970 is beyond BSON's range of dates"
                return .scalar(.null)
            }
            return .scalar(.datetime(sum))
        case .float(let number): return .scalar(.double(Double(number)))
        case .double(let number): return .scalar(.double(number))
        case .decimal(let decimal): return .scalar(.decimal128(decimal))
        case .objectId(let id): return .scalar(.objectId(id))
        case .uuid(let uuid): return .scalar(Self.uuidBSON(uuid))
        case .link(_, let key):
            if case .globalKey = key {
                problems[Key(table: path.table, object: path.object)] =
                    problems[Key(table: path.table, object: path.object)]
                    ?? "\(path.field): a link by GlobalKey cannot be stored; links are stored as the target's primary key"
                return .scalar(.null)
            }
            return .scalar(Self.bson(key))
        }
    }

    /// A primary key as the SDK stores it (and links to it).
    static func bson(_ key: PrimaryKey) -> BSON {
        switch key {
        case .null, .globalKey: return .null
        case .int(let number): return .int64(number)
        case .string(let text): return .string(text)
        case .objectId(let id): return .objectId(id)
        case .uuid(let uuid): return uuidBSON(uuid)
        }
    }

    static func uuidBSON(_ uuid: UUID) -> BSON {
        var bytes: [UInt8] = []
        ChangesetEncoder.appendUUID(uuid, to: &bytes)
        return .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: bytes))
    }
}
