import Foundation

// JSON form (the server's app configuration file):
//
//   [ { "name": "WeatherSensor", "kind": "asymmetric", "primaryKey": "_id",
//       "properties": [ { "name": "_id", "type": "objectId" },
//                       { "name": "tags", "type": "string", "collection": "list" },
//                       { "name": "station", "type": "object", "objectClass": "Station",
//                         "optional": true } ] } ]
//
// "kind" defaults to "topLevel", "optional" and "indexed" to false,
// "collection" to "single". Unknown keys are errors (they are usually typos).

extension Property: Codable {
    private enum Key: String, CodingKey, CaseIterable {
        case name, type, optional, collection, objectClass, indexed
    }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, allowed: Key.allCases.map(\.rawValue), what: "property")
        let container = try decoder.container(keyedBy: Key.self)
        let name = try container.decode(String.self, forKey: .name)
        let type = try decodeEnum(PropertyType.self, container, .type, what: "property type")
        self.init(
            name: name, type: type,
            isOptional: try container.decodeIfPresent(Bool.self, forKey: .optional) ?? false,
            collection: try decodeEnumIfPresent(CollectionKind.self, container, .collection, what: "collection kind") ?? .single,
            objectClassName: try container.decodeIfPresent(String.self, forKey: .objectClass),
            isIndexed: try container.decodeIfPresent(Bool.self, forKey: .indexed) ?? false)
    }

    /// Encodes the JSON form; ``isPrimaryKey`` is carried by the object's
    /// `primaryKey` instead.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(name, forKey: .name)
        try container.encode(type, forKey: .type)
        if isOptional { try container.encode(true, forKey: .optional) }
        if collection != .single { try container.encode(collection, forKey: .collection) }
        try container.encodeIfPresent(objectClassName, forKey: .objectClass)
        if isIndexed { try container.encode(true, forKey: .indexed) }
    }
}

extension ObjectSchema: Codable {
    private enum Key: String, CodingKey, CaseIterable {
        case name, kind, primaryKey, properties
    }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, allowed: Key.allCases.map(\.rawValue), what: "class")
        let container = try decoder.container(keyedBy: Key.self)
        let name = try container.decode(String.self, forKey: .name)
        let kind = try decodeEnumIfPresent(Kind.self, container, .kind, what: "class kind") ?? .topLevel
        var properties = try container.decode([Property].self, forKey: .properties)
        if let key = try container.decodeIfPresent(String.self, forKey: .primaryKey) {
            guard let index = properties.firstIndex(where: { $0.name == key }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .primaryKey, in: container,
                    debugDescription: "the primary key '\(key)' of \(name) is not one of its properties")
            }
            properties[index].isPrimaryKey = true
        }
        self.init(className: name, kind: kind, properties: properties)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(className, forKey: .name)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(primaryKey, forKey: .primaryKey)
        try container.encode(properties, forKey: .properties)
    }
}

extension Schema: Codable {
    /// Decodes a JSON array of classes; a duplicate class name is a
    /// decoding error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let objects = try container.decode([ObjectSchema].self)
        do {
            try self.init(objects)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(objectSchemas)
    }

    /// Decodes the JSON form, with errors that give the JSON path:
    /// `schema JSON at [0].properties[2].type: unknown property type "flaot"; expected one of bool, int, …`.
    ///
    /// ```swift
    /// let schema = try Schema(json: Data(#"[{"name":"Log","kind":"asymmetric","primaryKey":"_id","properties":[{"name":"_id","type":"objectId"}]}]"#.utf8))
    /// ```
    public init(json: Data) throws(SchemaError) {
        do {
            _ = try JSONSerialization.jsonObject(with: json)
        } catch {
            throw SchemaError(.invalidJSON, message: "schema JSON is not valid JSON: \(error.localizedDescription)")
        }
        do {
            self = try JSONDecoder().decode(Schema.self, from: json)
        } catch let error as DecodingError {
            throw SchemaError(.invalidJSON, message: Self.describe(error))
        } catch {
            throw SchemaError(.invalidJSON, message: "schema JSON: \(error)")
        }
    }

    /// The JSON form, pretty-printed with sorted keys.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
            }
            return text.isEmpty ? "the top level" : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let location = path(context.codingPath)
            return "schema JSON at \(location): the required key \"\(key.stringValue)\" is missing"
        case .typeMismatch(let type, let context):
            return "schema JSON at \(path(context.codingPath)): expected \(jsonTypeName(type))"
        case .valueNotFound(let type, let context):
            return "schema JSON at \(path(context.codingPath)): expected \(jsonTypeName(type)), found null"
        case .dataCorrupted(let context):
            return "schema JSON at \(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "schema JSON: \(error)"
        }
    }

    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is [ObjectSchema].Type, is [Property].Type: return "an array"
        default:
            let name = String(describing: type)
            return name.hasPrefix("Array") || name.hasPrefix("[") ? "an array" : "an object (\(name))"
        }
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

private func rejectUnknownKeys(_ decoder: any Decoder, allowed: [String], what: String) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for key in container.allKeys where !allowed.contains(key.stringValue) {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: container,
            debugDescription: "unknown \(what) key \"\(key.stringValue)\"; the keys are \(allowed.joined(separator: ", "))")
    }
}

private func decodeEnum<E: RawRepresentable & CaseIterable, K: CodingKey>(
    _ type: E.Type, _ container: KeyedDecodingContainer<K>, _ key: K, what: String
) throws -> E where E.RawValue == String {
    guard let value = try decodeEnumIfPresent(type, container, key, what: what) else {
        throw DecodingError.keyNotFound(key, .init(codingPath: container.codingPath, debugDescription: "missing \(what)"))
    }
    return value
}

private func decodeEnumIfPresent<E: RawRepresentable & CaseIterable, K: CodingKey>(
    _ type: E.Type, _ container: KeyedDecodingContainer<K>, _ key: K, what: String
) throws -> E? where E.RawValue == String {
    guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
    guard let value = E(rawValue: text) else {
        let expected = E.allCases.map(\.rawValue).joined(separator: ", ")
        throw DecodingError.dataCorruptedError(
            forKey: key, in: container, debugDescription: "unknown \(what) \"\(text)\"; expected one of \(expected)")
    }
    return value
}
