// BSON form (carried in segment headers): the same shape as the JSON form.
//
//   { "objects": [ { "name": "WeatherSensor", "kind": "asymmetric", "primaryKey": "_id",
//                    "properties": [ { "name": "_id", "type": "objectId" }, … ] } ] }

extension Property {
    /// The BSON form: `{name, type, optional?, collection?, objectClass?, indexed?}`.
    public var bsonDocument: BSONDocument {
        var document: BSONDocument = ["name": .string(name), "type": .string(type.rawValue)]
        if isOptional { document.append("optional", .bool(true)) }
        if collection != .single { document.append("collection", .string(collection.rawValue)) }
        if let objectClassName { document.append("objectClass", .string(objectClassName)) }
        if isIndexed { document.append("indexed", .bool(true)) }
        return document
    }

    /// Decodes the BSON form; `path` is used in error messages.
    public init(bsonDocument document: BSONDocument, path: String = "property") throws(SchemaError) {
        let reader = SchemaBSONReader(
            document: document, path: path,
            allowed: ["name", "type", "optional", "collection", "objectClass", "indexed"])
        try reader.checkKeys()
        let type: PropertyType = try reader.enumValue("type", required: true)!
        self.init(
            name: try reader.string("name", required: true)!,
            type: type,
            isOptional: try reader.bool("optional") ?? false,
            collection: try reader.enumValue("collection", required: false) ?? .single,
            objectClassName: try reader.string("objectClass", required: false),
            isIndexed: try reader.bool("indexed") ?? false)
    }
}

extension ObjectSchema {
    /// The BSON form: `{name, kind, primaryKey?, properties: [...]}`.
    public var bsonDocument: BSONDocument {
        var document: BSONDocument = ["name": .string(className), "kind": .string(kind.rawValue)]
        if let primaryKey { document.append("primaryKey", .string(primaryKey)) }
        document.append("properties", .array(properties.map { .document($0.bsonDocument) }))
        return document
    }

    /// Decodes the BSON form; `path` is used in error messages.
    public init(bsonDocument document: BSONDocument, path: String = "class") throws(SchemaError) {
        let reader = SchemaBSONReader(document: document, path: path, allowed: ["name", "kind", "primaryKey", "properties"])
        try reader.checkKeys()
        let name = try reader.string("name", required: true)!
        let kind: Kind = try reader.enumValue("kind", required: false) ?? .topLevel
        guard case .array(let elements)? = document["properties"] else {
            throw SchemaError(
                .invalidBSON, className: name, message: "schema BSON at \(path).properties: expected an array of property documents")
        }
        var properties: [Property] = []
        for (index, element) in elements.enumerated() {
            guard case .document(let propertyDocument) = element else {
                throw SchemaError(
                    .invalidBSON, className: name, message: "schema BSON at \(path).properties[\(index)]: expected a document")
            }
            properties.append(try Property(bsonDocument: propertyDocument, path: "\(path).properties[\(index)]"))
        }
        if let key = try reader.string("primaryKey", required: false) {
            guard let index = properties.firstIndex(where: { $0.name == key }) else {
                throw SchemaError(
                    .invalidBSON, className: name,
                    message: "schema BSON at \(path).primaryKey: the primary key '\(key)' of \(name) is not one of its properties")
            }
            properties[index].isPrimaryKey = true
        }
        self.init(className: name, kind: kind, properties: properties)
    }
}

extension Schema {
    /// The BSON form: `{objects: [...]}`.
    public var bsonDocument: BSONDocument {
        ["objects": .array(objectSchemas.map { .document($0.bsonDocument) })]
    }

    /// Decodes the BSON form, for example from a segment header.
    public init(bsonDocument document: BSONDocument) throws(SchemaError) {
        guard case .array(let elements)? = document["objects"] else {
            throw SchemaError(.invalidBSON, message: "schema BSON: expected a field 'objects' holding an array of class documents")
        }
        var objects: [ObjectSchema] = []
        for (index, element) in elements.enumerated() {
            guard case .document(let objectDocument) = element else {
                throw SchemaError(.invalidBSON, message: "schema BSON at objects[\(index)]: expected a document")
            }
            objects.append(try ObjectSchema(bsonDocument: objectDocument, path: "objects[\(index)]"))
        }
        try self.init(objects)
    }
}

/// Typed field access with path-carrying errors.
private struct SchemaBSONReader {
    let document: BSONDocument
    let path: String
    let allowed: [String]

    func checkKeys() throws(SchemaError) {
        for key in document.keys where !allowed.contains(key) {
            throw SchemaError(
                .invalidBSON, message: "schema BSON at \(path): unknown key '\(key)'; the keys are \(allowed.joined(separator: ", "))")
        }
    }

    func string(_ key: String, required: Bool) throws(SchemaError) -> String? {
        switch document[key] {
        case .string(let value)?: return value
        case nil where !required: return nil
        case nil: throw SchemaError(.invalidBSON, message: "schema BSON at \(path): the required key '\(key)' is missing")
        case let other?:
            throw SchemaError(.invalidBSON, message: "schema BSON at \(path).\(key): expected a string, found \(other.schemaTypeName)")
        }
    }

    func bool(_ key: String) throws(SchemaError) -> Bool? {
        switch document[key] {
        case .bool(let value)?: return value
        case nil: return nil
        case let other?:
            throw SchemaError(.invalidBSON, message: "schema BSON at \(path).\(key): expected a boolean, found \(other.schemaTypeName)")
        }
    }

    func enumValue<E: RawRepresentable & CaseIterable>(_ key: String, required: Bool) throws(SchemaError) -> E? where E.RawValue == String {
        guard let text = try string(key, required: required) else { return nil }
        guard let value = E(rawValue: text) else {
            throw SchemaError(
                .invalidBSON,
                message:
                    "schema BSON at \(path).\(key): unknown value '\(text)'; expected one of \(E.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        return value
    }
}
