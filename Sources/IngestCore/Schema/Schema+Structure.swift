extension Schema {
    /// Checks the rules every schema must follow and throws the first broken
    /// one. See ``structuralErrors(synced:)`` for the rules.
    public func checkStructure(synced: Bool) throws(SchemaError) {
        if let first = structuralErrors(synced: synced).first { throw first }
    }

    /// Every broken rule, in class and property order:
    ///
    /// - class and property names are non-empty; property names contain no
    ///   `.`, do not start with `$`, and are unique within their class;
    /// - at most one primary key, of type int, string, objectId or uuid,
    ///   not optional, not a collection; embedded classes have none;
    /// - when `synced`: every non-embedded class has the primary key `_id`
    ///   (asymmetric classes are stored under it, links store it);
    /// - object properties name a class in the set; nothing links to an
    ///   asymmetric class; a link target has a primary key;
    /// - a single object property is optional, a list of objects has
    ///   non-optional elements, a map of objects has optional values;
    /// - indexes only on bool, int, string, date, objectId, uuid and mixed
    ///   single values.
    public func structuralErrors(synced: Bool) -> [SchemaError] {
        var errors: [SchemaError] = []
        for object in objectSchemas {
            checkClass(object, synced: synced, into: &errors)
        }
        return errors
    }

    private func checkClass(_ object: ObjectSchema, synced: Bool, into errors: inout [SchemaError]) {
        let name = object.className
        if name.isEmpty {
            errors.append(SchemaError(.invalidName, message: "a class has an empty name; give every class a non-empty className()"))
        }
        var seen: Set<String> = []
        for property in object.properties {
            if property.name.isEmpty || property.name.contains(".") || property.name.hasPrefix("$") {
                errors.append(
                    SchemaError(
                        .invalidName, className: name, propertyName: property.name,
                        message:
                            "\(name).\(property.name): property names must be non-empty, contain no '.' and not start with '$'; rename it or map it with propertiesMapping()"
                    ))
            }
            if !seen.insert(property.name).inserted {
                errors.append(
                    SchemaError(
                        .duplicateProperty, className: name, propertyName: property.name,
                        message:
                            "\(name) has two properties stored as '\(property.name)'; each stored name must be unique: check propertiesMapping()"
                    ))
            }
            checkProperty(property, of: object, into: &errors)
        }
        let keys = object.properties.filter(\.isPrimaryKey)
        if object.kind == .embedded, let key = keys.first {
            errors.append(
                SchemaError(
                    .invalidPrimaryKey, className: name, propertyName: key.name,
                    message: "\(name).\(key.name): an embedded object cannot have a primary key; remove primaryKey: true"))
        }
        if keys.count > 1 {
            errors.append(
                SchemaError(
                    .invalidPrimaryKey, className: name, propertyName: keys[1].name,
                    message:
                        "\(name) has more than one primary key (\(keys.map(\.name).joined(separator: ", "))); mark only one property primaryKey: true"
                ))
        }
        for key in keys {
            if !key.type.canBePrimaryKey || key.collection != .single || key.isOptional {
                errors.append(
                    SchemaError(
                        .invalidPrimaryKey, className: name, propertyName: key.name,
                        message:
                            "\(name).\(key.name): a primary key must be a non-optional Int, String, ObjectId or UUID, not \(key.typeDescription)"
                    ))
            }
        }
        if synced && object.kind != .embedded && keys.first?.name != "_id" {
            let found = keys.first.map { "its primary key is '\($0.name)'" } ?? "it has no primary key"
            errors.append(
                SchemaError(
                    .missingPrimaryKey, className: name, propertyName: keys.first?.name,
                    message:
                        "\(name): every synced type needs the primary key '_id', but \(found); declare @Persisted(primaryKey: true) var _id: ObjectId (or map your key to '_id' with propertiesMapping())"
                ))
        }
    }

    private func checkProperty(_ property: Property, of object: ObjectSchema, into errors: inout [SchemaError]) {
        let name = object.className
        let path = "\(name).\(property.name)"
        if property.isIndexed && (!property.type.canBeIndexed || property.collection != .single) {
            errors.append(
                SchemaError(
                    .invalidIndex, className: name, propertyName: property.name,
                    message:
                        "\(path): a \(property.typeDescription) property cannot be indexed; remove indexed: true (indexes work on Bool, Int, String, Date, ObjectId, UUID and mixed values)"
                ))
        }
        guard property.type == .object else {
            if let target = property.objectClassName {
                errors.append(
                    SchemaError(
                        .unsupportedPropertyType, className: name, propertyName: property.name,
                        message:
                            "\(path): a \(property.type.rawValue) property cannot name a target class ('\(target)'); remove objectClassName or make it an object property"
                    ))
            }
            return
        }
        guard let targetName = property.objectClassName, !targetName.isEmpty else {
            errors.append(
                SchemaError(
                    .unknownTargetClass, className: name, propertyName: property.name,
                    message: "\(path): an object property must name its target class"))
            return
        }
        guard let target = self[targetName] else {
            errors.append(
                SchemaError(
                    .unknownTargetClass, className: name, propertyName: property.name,
                    message:
                        "\(path) refers to class '\(targetName)', which is not in the schema; add '\(targetName)' to the schema (objectTypes)"
                ))
            return
        }
        switch target.kind {
        case .asymmetric:
            errors.append(
                SchemaError(
                    .linkToAsymmetric, className: name, propertyName: property.name,
                    message:
                        "\(path) links to the asymmetric class '\(targetName)'; nothing may link to an asymmetric object (it is never stored on the device): remove the property or make '\(targetName)' an EmbeddedObject"
                ))
        case .topLevel:
            if target.primaryKey == nil {
                errors.append(
                    SchemaError(
                        .unsupportedPropertyType, className: name, propertyName: property.name,
                        message:
                            "\(path) links to '\(targetName)', which has no primary key; links are stored as the target's primary key: give '\(targetName)' @Persisted(primaryKey: true) var _id"
                    ))
            }
        case .embedded:
            break
        }
        switch property.collection {
        case .single where !property.isOptional:
            errors.append(
                SchemaError(
                    .unsupportedPropertyType, className: name, propertyName: property.name,
                    message: "\(path): an object property must be optional; declare it as \(targetName)?"))
        case .list where property.isOptional:
            errors.append(
                SchemaError(
                    .unsupportedPropertyType, className: name, propertyName: property.name,
                    message: "\(path): a list of objects cannot hold nil; declare it as List<\(targetName)>"))
        case .map where !property.isOptional:
            errors.append(
                SchemaError(
                    .unsupportedPropertyType, className: name, propertyName: property.name,
                    message: "\(path): a map of objects must have optional values; declare it as Map<String, \(targetName)?>"))
        default:
            break
        }
    }
}
