import IngestSupport

/// The schema part of an app's configuration: which collections accept data
/// and what their objects look like.
///
/// This is the server's own parsed form of the `schema` config field. When
/// the shared schema model (IngestCore `Schema`) lands, this file is the one
/// place to swap: ``AppConfiguration/schema`` converts to it.
///
/// ```json
/// "schema": {
///   "WeatherSensor": {
///     "kind": "asymmetric",
///     "properties": {
///       "_id": "objectId",
///       "deviceId": "string",
///       "temperature": "double?",
///       "readings": "Reading[]"
///     }
///   },
///   "Reading": { "kind": "embedded", "properties": { "at": "date", "value": "double" } }
/// }
/// ```
package struct ConfigSchema: Sendable, Hashable {
    /// The object types in declaration order.
    package var objectTypes: [ObjectType]

    package init(objectTypes: [ObjectType] = []) {
        self.objectTypes = objectTypes
    }

    /// The type named `name`, if declared.
    package subscript(name: String) -> ObjectType? {
        objectTypes.first { $0.name == name }
    }

    /// The collections that accept uploaded data (the asymmetric types).
    package var asymmetricTypes: [ObjectType] {
        objectTypes.filter { $0.kind == .asymmetric }
    }

    /// One declared object type.
    package struct ObjectType: Sendable, Hashable {
        /// The type (and collection) name.
        package var name: String
        /// Asymmetric (a collection that accepts data) or embedded (only inside another object).
        package var kind: Kind
        /// Properties in declaration order. Asymmetric types have `_id` as their primary key.
        package var properties: [Property]

        package init(name: String, kind: Kind, properties: [Property]) {
            self.name = name
            self.kind = kind
            self.properties = properties
        }

        /// The property named `name`, if declared.
        package subscript(property name: String) -> Property? {
            properties.first { $0.name == name }
        }
    }

    /// Whether a type is a collection or an embedded object.
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A write-only collection that accepts uploaded objects.
        case asymmetric
        /// An object that exists only inside another object.
        case embedded
    }

    /// One property of an object type.
    package struct Property: Sendable, Hashable {
        /// The property name (a BSON field name).
        package var name: String
        /// The element type: a scalar or an embedded object type.
        package var type: ValueType
        /// Single value, list, set or map (string keys).
        package var collection: Collection
        /// Whether the value (or, for collections, each element) may be null.
        package var isOptional: Bool

        package init(name: String, type: ValueType, collection: Collection = .single, isOptional: Bool = false) {
            self.name = name
            self.type = type
            self.collection = collection
            self.isOptional = isOptional
        }
    }

    /// The type of a property's values.
    package enum ValueType: Sendable, Hashable {
        case bool, int, float, double, string, data, date, decimal128, objectId, uuid, mixed
        /// An embedded object of the named type.
        case object(String)

        /// The scalar type names accepted in the configuration.
        package static let scalarNames: [String: ValueType] = [
            "bool": .bool, "int": .int, "float": .float, "double": .double, "string": .string, "data": .data,
            "date": .date, "decimal128": .decimal128, "objectId": .objectId, "uuid": .uuid, "mixed": .mixed,
        ]

        /// The name used in the configuration.
        package var name: String {
            switch self {
            case .object(let name): name
            default: ValueType.scalarNames.first { $0.value == self }?.key ?? "unknown"
            }
        }
    }

    /// Single value or a collection of values.
    package enum Collection: String, Sendable, Hashable {
        case single, list, set, map
    }
}

// MARK: - Parsing

extension ConfigSchema {
    /// Parses the `schema` object of an app configuration and checks it:
    /// object references resolve to embedded types; asymmetric types have an
    /// `_id` of type objectId, uuid, string or int that is not optional;
    /// nothing refers to an asymmetric type.
    ///
    /// A property is a shorthand string (`"double"`, `"double?"`, `"Reading[]"`,
    /// `"string<>"` for a set, `"int{}"` for a map, `"Location?"`) or an object
    /// `{"type": "double", "optional": true, "collection": "list"}`.
    init(json value: JSONValue, path: String) throws(ConfigError) {
        var reader = try ConfigReader(value, path: path)
        var types: [ObjectType] = []
        for (name, typeValue) in reader.allMembers() {
            let typePath = reader.path(name)
            guard ConfigSchema.isValidName(name) else {
                throw ConfigError(
                    .invalidValue, path: typePath,
                    "invalid type name; use letters, digits and _ (not starting with a digit), at most 57 characters")
            }
            var typeReader = try ConfigReader(typeValue, path: typePath)
            let kindText = try typeReader.requiredString("kind")
            guard let kind = Kind(rawValue: kindText) else {
                throw ConfigError(
                    .invalidValue, path: typeReader.path("kind"),
                    "unknown kind \"\(kindText)\"; use asymmetric or embedded")
            }
            guard var propertiesReader = try typeReader.object("properties") else {
                throw ConfigError(.missingField, path: typeReader.path("properties"), "required field is missing")
            }
            var properties: [Property] = []
            for (propertyName, propertyValue) in propertiesReader.allMembers() {
                let propertyPath = propertiesReader.path(propertyName)
                guard ConfigSchema.isValidPropertyName(propertyName) else {
                    throw ConfigError(
                        .invalidValue, path: propertyPath,
                        "invalid property name; it must be non-empty, not start with $ and not contain . or NUL")
                }
                properties.append(try ConfigSchema.parseProperty(propertyName, propertyValue, path: propertyPath))
            }
            try typeReader.finish()
            types.append(ObjectType(name: name, kind: kind, properties: properties))
        }
        try reader.finish()
        self.init(objectTypes: types)
        try check(path: path)
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 57 else { return false }
        let isASCIIWord: (Unicode.Scalar) -> Bool = {
            ($0.value >= 0x41 && $0.value <= 0x5A) || ($0.value >= 0x61 && $0.value <= 0x7A) || $0 == "_"
                || ($0.value >= 0x30 && $0.value <= 0x39)
        }
        return !(first.value >= 0x30 && first.value <= 0x39) && name.unicodeScalars.allSatisfy(isASCIIWord)
    }

    static func isValidPropertyName(_ name: String) -> Bool {
        // Development mode checks every field of every record it learns from:
        // Foundation's String.contains is asked only when a "." or NUL byte is
        // there at all (without one it cannot find either), and it is slow.
        let suspicious = name.utf8.contains { $0 == UInt8(ascii: ".") || $0 == 0 }
        return !name.isEmpty && !name.hasPrefix("$") && name.utf8.count <= 255
            && (!suspicious || (!name.contains(".") && !name.contains("\0")))
    }

    static func parseProperty(_ name: String, _ value: JSONValue, path: String) throws(ConfigError) -> Property {
        if case .string(let shorthand) = value {
            var text = Substring(shorthand)
            var collection = Collection.single
            for (suffix, kind) in [("[]", Collection.list), ("<>", .set), ("{}", .map)] where text.hasSuffix(suffix) {
                collection = kind
                text = text.dropLast(2)
                break
            }
            var isOptional = false
            if text.hasSuffix("?") {
                isOptional = true
                text = text.dropLast()
            }
            return Property(
                name: name, type: try parseValueType(String(text), path: path),
                collection: collection, isOptional: isOptional)
        }
        var reader = try ConfigReader(value, path: path)
        let typeName = try reader.requiredString("type")
        let isOptional = try reader.bool("optional") ?? false
        let collectionText = try reader.string("collection") ?? "single"
        guard let collection = Collection(rawValue: collectionText) else {
            throw ConfigError(
                .invalidValue, path: reader.path("collection"),
                "unknown collection \"\(collectionText)\"; use single, list, set or map")
        }
        try reader.finish()
        return Property(
            name: name, type: try parseValueType(typeName, path: reader.path("type")),
            collection: collection, isOptional: isOptional)
    }

    static func parseValueType(_ text: String, path: String) throws(ConfigError) -> ValueType {
        if let scalar = ValueType.scalarNames[text] { return scalar }
        guard isValidName(text), let first = text.unicodeScalars.first, first.properties.isUppercase else {
            throw ConfigError(
                .invalidValue, path: path,
                "unknown type \"\(text)\"; use one of \(ValueType.scalarNames.keys.sorted().joined(separator: ", ")), "
                    + "or the name of an embedded type (capitalized), with an optional suffix ?, [], <> or {}")
        }
        return .object(text)
    }

    func check(path: String) throws(ConfigError) {
        var names = Set<String>()
        for type in objectTypes {
            let typePath = path.isEmpty ? type.name : "\(path).\(type.name)"
            guard names.insert(type.name).inserted else {
                throw ConfigError(.invalidValue, path: typePath, "type declared twice")
            }
            for property in type.properties {
                let propertyPath = "\(typePath).properties.\(property.name)"
                if case .object(let target) = property.type {
                    guard let targetType = self[target] else {
                        throw ConfigError(
                            .invalidValue, path: propertyPath,
                            "refers to \(target), which the schema does not declare")
                    }
                    guard targetType.kind == .embedded else {
                        throw ConfigError(
                            .invalidValue, path: propertyPath,
                            "refers to \(target), which is asymmetric; nothing may link to an asymmetric object. "
                                + "Declare \(target) as embedded or store its _id instead")
                    }
                    if property.collection == .set {
                        throw ConfigError(
                            .invalidValue, path: propertyPath,
                            "a set cannot hold embedded objects; use a list")
                    }
                }
            }
            if type.kind == .asymmetric {
                guard let id = type[property: "_id"] else {
                    throw ConfigError(
                        .missingField, path: "\(typePath).properties._id",
                        "an asymmetric type needs an _id primary key (objectId, uuid, string or int)")
                }
                guard [.objectId, .uuid, .string, .int].contains(id.type), id.collection == .single, !id.isOptional else {
                    throw ConfigError(
                        .invalidValue, path: "\(typePath).properties._id",
                        "_id must be a non-optional objectId, uuid, string or int")
                }
            }
        }
        // Embedded types must not contain themselves without an optional or collection hop,
        // or no finite object could satisfy them.
        for type in objectTypes where type.kind == .embedded {
            var visiting = Set<String>()
            if requiresCycle(from: type.name, visiting: &visiting) {
                throw ConfigError(
                    .invalidValue, path: path.isEmpty ? type.name : "\(path).\(type.name)",
                    "the embedded type requires itself through non-optional properties; make one of them optional or a list")
            }
        }
    }

    private func requiresCycle(from name: String, visiting: inout Set<String>) -> Bool {
        guard visiting.insert(name).inserted else { return true }
        defer { visiting.remove(name) }
        for property in self[name]?.properties ?? []
        where property.collection == .single && !property.isOptional {
            if case .object(let target) = property.type, requiresCycle(from: target, visiting: &visiting) { return true }
        }
        return false
    }
}
