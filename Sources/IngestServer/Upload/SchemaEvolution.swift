import IngestCore

/// Development mode's schema growth: classes and properties that uploads
/// use but the app's schema lacks are added, never changed or removed.
///
/// New definitions come from the schema the client put in the segment
/// header when it has them, otherwise they are inferred from the values
/// (`double` → double, `int32`/`int64` → int, `string` → string, a
/// document or array → mixed, …). Properties added to an existing class are
/// optional, so the rows already stored stay valid. Unknown fields inside
/// embedded objects are not added: such objects are rejected.
///
/// ```swift
/// if let grown = SchemaEvolution.grow(schema, records: docs, clientSchema: headerSchema) {
///     try sink.migrate(to: grown)
/// }
/// ```
enum SchemaEvolution {
    /// The schema with what `records` need added, or nil if nothing is missing.
    static func grow(
        _ schema: Schema, records: [(collection: String, document: BSONDocument)],
        clientSchema: Schema?
    ) -> Schema? {
        var additions: [ObjectSchema] = []
        var pending: [String: Int] = [:]  // class name → index in additions
        func add(_ object: ObjectSchema) {
            if let index = pending[object.className] {
                for property in object.properties where additions[index][property: property.name] == nil {
                    additions[index].properties.append(property)
                }
            } else {
                pending[object.className] = additions.count
                additions.append(object)
            }
        }
        // Consecutive records mostly share a collection: look its class up once per run.
        var lookedUp: (collection: String, object: ObjectSchema?)?
        for (collection, document) in records {
            let known: ObjectSchema?
            if let lookedUp, lookedUp.collection == collection {
                known = lookedUp.object
            } else {
                known = schema[collection]
                lookedUp = (collection, known)
            }
            // Already added for an earlier record of this upload (a new class
            // in a first upload, or new fields): when every field is covered,
            // `add` would change nothing, so skip building the definitions
            // again. Without this, each record of a new class built and merged
            // a whole inferred class: in the first upload of a development
            // app that cost more than storing the records.
            let pendingObject = pending[collection].map { additions[$0] }
            if let known {
                guard known.kind == .asymmetric else { continue }
                // The common case, checked without copying properties: nothing to add.
                if hasEveryField(of: document, in: known) { continue }
                if let pendingObject, hasEveryField(of: document, in: known, orIn: pendingObject) { continue }
                let client = clientSchema?[collection]
                var added: [Property] = []
                for field in document where known[property: field.key] == nil {
                    guard ConfigSchema.isValidPropertyName(field.key) else { continue }
                    var property = client?[property: field.key] ?? inferred(field.key, field.value)
                    property.isPrimaryKey = false
                    if property.collection == .single { property.isOptional = true }
                    added.append(property)
                    addTargets(of: property, from: clientSchema, into: add)
                }
                if !added.isEmpty { add(ObjectSchema(className: collection, kind: .asymmetric, properties: added)) }
            } else {
                if let pendingObject, hasEveryField(of: document, in: pendingObject) { continue }
                guard ConfigSchema.isValidName(collection), collection != SQLiteSink.receiptsTable else { continue }
                if let client = clientSchema?[collection] {
                    guard client.kind == .asymmetric, client.primaryKey == "_id" else { continue }
                    add(client)
                    for property in client.properties { addTargets(of: property, from: clientSchema, into: add) }
                } else {
                    guard let id = document["_id"] else { continue }
                    var key = inferred("_id", id)
                    guard key.type.canBePrimaryKey, key.collection == .single else { continue }
                    key.isOptional = false
                    key.isPrimaryKey = true
                    var properties = [key]
                    for field in document where field.key != "_id" && ConfigSchema.isValidPropertyName(field.key) {
                        properties.append(inferred(field.key, field.value))
                    }
                    add(ObjectSchema(className: collection, kind: .asymmetric, properties: properties))
                }
            }
        }
        guard !additions.isEmpty else { return nil }
        let grown = merged(schema, with: additions)
        return grown == schema ? nil : grown
    }

    /// Whether every field of `document` names a property of `object`
    /// (fields in schema order are matched by position first).
    private static func hasEveryField(of document: BSONDocument, in object: ObjectSchema) -> Bool {
        let properties = object.properties
        for (position, field) in document.enumerated() {
            if position < properties.count && properties[position].name == field.key { continue }
            guard properties.contains(where: { $0.name == field.key }) else { return false }
        }
        return true
    }

    /// Whether every field of `document` names a property of `object` or of
    /// `additions` (the properties already added to it in this upload).
    private static func hasEveryField(
        of document: BSONDocument, in object: ObjectSchema,
        orIn additions: ObjectSchema
    ) -> Bool {
        let properties = object.properties
        for (position, field) in document.enumerated() {
            if position < properties.count && properties[position].name == field.key { continue }
            if properties.contains(where: { $0.name == field.key }) { continue }
            guard additions.properties.contains(where: { $0.name == field.key }) else { return false }
        }
        return true
    }

    /// Names a client cannot add: columns the sinks use themselves.
    static let reservedPropertyNames: Set<String> = ["_ingested_at"]

    /// `base` plus the classes and properties of `additions` it lacks.
    ///
    /// Left out, so that objects using them are rejected (permanently, per
    /// object) instead of breaking the sink: properties whose embedded target
    /// is unknown, reserved names, and names that differ from an existing
    /// class or property only in letter case (SQL identifiers are
    /// case-insensitive).
    static func merged(_ base: Schema, with additions: [ObjectSchema]) -> Schema {
        var classes = base.objectSchemas
        var index: [String: Int] = [:]
        var lowercasedClasses = Set(classes.map { $0.className.lowercased() })
        for (position, object) in classes.enumerated() { index[object.className] = position }
        func admissible(_ property: Property, in object: ObjectSchema) -> Bool {
            let lowered = property.name.lowercased()
            return !reservedPropertyNames.contains(lowered)
                && !object.properties.contains { $0.name.lowercased() == lowered }
        }
        for object in additions {
            if let position = index[object.className] {
                guard classes[position].kind == object.kind else { continue }
                for property in object.properties where admissible(property, in: classes[position]) {
                    var property = property
                    property.isPrimaryKey = false
                    if property.collection == .single { property.isOptional = true }
                    classes[position].properties.append(property)
                }
            } else {
                guard lowercasedClasses.insert(object.className.lowercased()).inserted else { continue }
                var added = ObjectSchema(className: object.className, kind: object.kind, properties: [])
                for property in object.properties where admissible(property, in: added) {
                    added.properties.append(property)
                }
                index[object.className] = classes.count
                classes.append(added)
            }
        }
        let names = Set(classes.map(\.className))
        for position in classes.indices {
            classes[position].properties.removeAll { property in
                property.type == .object && !names.contains(property.objectClassName ?? "")
            }
        }
        return (try? Schema(classes)) ?? base
    }

    /// Adds the embedded class a property refers to (and, recursively, its
    /// own targets) from the client's schema.
    private static func addTargets(of property: Property, from clientSchema: Schema?, into add: (ObjectSchema) -> Void) {
        var visited: Set<String> = []
        var queue = [property]
        while let next = queue.popLast() {
            guard next.type == .object, let name = next.objectClassName, visited.insert(name).inserted,
                let target = clientSchema?[name], target.kind == .embedded
            else { continue }
            add(target)
            queue.append(contentsOf: target.properties)
        }
    }

    /// A property definition guessed from one value: optional, scalar where
    /// the value is a scalar, otherwise mixed (which accepts documents and arrays).
    static func inferred(_ name: String, _ value: BSON) -> Property {
        let type: PropertyType
        switch value {
        case .double: type = .double
        case .string: type = .string
        case .int32, .int64: type = .int
        case .bool: type = .bool
        case .datetime: type = .date
        case .decimal128: type = .decimal128
        case .objectId: type = .objectId
        case .binary(let binary) where binary.subtype == BSONBinary.Subtype.uuid && binary.bytes.count == 16: type = .uuid
        case .binary(let binary) where binary.subtype == BSONBinary.Subtype.generic: type = .data
        default: type = .mixed
        }
        return Property(name: name, type: type, isOptional: true)
    }
}
