extension Schema {
    /// The most violations one validation reports; the rest are dropped so
    /// that a hostile document cannot make the report large.
    public static let maximumViolations = 64

    /// Checks `document` against the class named `className`, with embedded
    /// objects and link targets looked up in this set. Returns no violations
    /// when the document is valid. Used by the client on create and by the
    /// server on upload.
    ///
    /// ```swift
    /// for violation in schema.validate(doc, against: "WeatherSensor") {
    ///     print(violation.path, violation.code, violation.reason)
    /// }
    /// ```
    public func validate(_ document: BSONDocument, against className: String) -> [SchemaViolation] {
        guard let object = self[className] else {
            return [SchemaViolation(path: "", code: .unknownClass, reason: "the schema has no class named '\(className)'")]
        }
        return object.validate(document, in: self)
    }
}

extension ObjectSchema {
    /// Checks `document` against this class; `schema` supplies embedded and
    /// link-target classes. See ``Schema/validate(_:against:)``.
    public func validate(_ document: BSONDocument, in schema: Schema) -> [SchemaViolation] {
        var validator = DocumentValidator(schema: schema)
        validator.check(document, as: self, path: "")
        return validator.violations
    }
}

/// Walks a document and collects violations, up to a bound.
struct DocumentValidator {
    let schema: Schema
    var violations: [SchemaViolation] = []

    init(schema: Schema) { self.schema = schema }

    private var full: Bool { violations.count >= Schema.maximumViolations }

    private mutating func report(_ path: String, _ code: SchemaViolation.Code, _ reason: String) {
        if !full { violations.append(SchemaViolation(path: path, code: code, reason: reason)) }
    }

    private static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    mutating func check(_ document: BSONDocument, as object: ObjectSchema, path: String) {
        // Most documents are valid: prove it cheaply, and word violations only when there are some.
        if Self.isCertainlyValid(document, as: object) { return }
        var seen: Set<String> = []
        seen.reserveCapacity(document.count)
        for field in document {
            let fieldPath = Self.join(path, field.key)
            guard seen.insert(field.key).inserted else {
                report(fieldPath, .duplicateField, "the field appears more than once")
                continue
            }
            guard let property = object[property: field.key] else {
                report(fieldPath, .unknownField, "\(object.className) has no property '\(field.key)'")
                continue
            }
            checkProperty(field.value, property, path: fieldPath)
            if full { return }
        }
        for property in object.properties where !seen.contains(property.name) {
            // Absent collections are empty; absent optionals are null.
            if property.collection == .single && !property.isOptional {
                report(
                    Self.join(path, property.name), .missingRequiredField,
                    "the required \(property.typeDescription) property '\(property.name)' of \(object.className) is missing")
            }
        }
    }

    /// The quick pass in front of ``check(_:as:path:)``: true when every
    /// field is a distinct property of `object` holding a single scalar value
    /// of its type, or null where a single property of any type is optional,
    /// and every required property is
    /// present. It allocates nothing (a bit set instead of a set of keys, no
    /// paths); on false the full check runs and words the violations, so the
    /// outcome is the same either way.
    static func isCertainlyValid(_ document: BSONDocument, as object: ObjectSchema) -> Bool {
        let properties = object.properties
        guard properties.count <= 64 else { return false }
        var seen: UInt64 = 0
        for (position, field) in document.enumerated() {
            // Clients write fields in schema order: try the same position first.
            let index: Int
            if position < properties.count && properties[position].name == field.key {
                index = position
            } else if let found = properties.firstIndex(where: { $0.name == field.key }) {
                index = found
            } else {
                return false
            }
            let bit: UInt64 = 1 << UInt64(index)
            guard seen & bit == 0 else { return false }
            seen |= bit
            let property = properties[index]
            guard property.collection == .single else { return false }
            // Null is judged by optionality alone, whatever the type (as checkProperty does).
            if case .null = field.value {
                guard property.isOptional else { return false }
                continue
            }
            guard property.type != .object, property.type != .mixed else { return false }
            guard matches(field.value, property.type) else { return false }
            if property.type == .float, case .double(let number) = field.value, number.isFinite,
                abs(number) > Double(Float.greatestFiniteMagnitude)
            {
                return false
            }
        }
        for (index, property) in properties.enumerated()
        where seen & (1 << UInt64(index)) == 0 && property.collection == .single && !property.isOptional {
            return false
        }
        return true
    }

    private mutating func checkProperty(_ value: BSON, _ property: Property, path: String) {
        switch property.collection {
        case .single:
            if case .null = value {
                if !property.isOptional {
                    report(path, .nullNotAllowed, "expected \(property.typeDescription), found null; the property is not optional")
                }
                return
            }
            checkElement(value, property, path: path, code: .wrongType)
        case .list:
            guard case .array(let elements) = value else {
                report(path, .wrongType, "expected \(property.typeDescription) (a BSON array), found \(value.schemaTypeName)")
                return
            }
            for (index, element) in elements.enumerated() {
                let elementPath = "\(path)[\(index)]"
                if case .null = element {
                    if !property.isOptional {
                        report(elementPath, .nullNotAllowed, "list elements of \(property.typeDescription) cannot be null")
                    }
                } else {
                    checkElement(element, property, path: elementPath, code: .wrongElementType)
                }
                if full { return }
            }
        case .map:
            guard case .document(let entries) = value else {
                report(path, .wrongType, "expected \(property.typeDescription) (an embedded document), found \(value.schemaTypeName)")
                return
            }
            var keys: Set<String> = []
            for entry in entries {
                let entryPath = "\(path).\(entry.key)"
                if entry.key.isEmpty || entry.key.contains(".") || entry.key.hasPrefix("$") {
                    report(entryPath, .invalidMapKey, "map keys must be non-empty, contain no '.' and not start with '$'")
                } else if !keys.insert(entry.key).inserted {
                    report(entryPath, .duplicateField, "the map key appears more than once")
                } else if case .null = entry.value {
                    if !property.isOptional {
                        report(entryPath, .nullNotAllowed, "map values of \(property.typeDescription) cannot be null")
                    }
                } else {
                    checkElement(entry.value, property, path: entryPath, code: .wrongElementType)
                }
                if full { return }
            }
        }
    }

    /// Checks one non-null value (a single value, a list element or a map value).
    private mutating func checkElement(_ value: BSON, _ property: Property, path: String, code: SchemaViolation.Code) {
        if property.type == .object {
            checkObject(value, property, path: path, code: code)
            return
        }
        if property.type == .mixed {
            checkMixed(value, path: path, code: code)
            return
        }
        guard Self.matches(value, property.type) else {
            report(
                path, code, "expected \(Self.bsonForm(of: property.type)) for \(property.typeDescription), found \(value.schemaTypeName)")
            return
        }
        if property.type == .float, case .double(let number) = value, number.isFinite,
            abs(number) > Double(Float.greatestFiniteMagnitude)
        {
            report(path, .outOfRange, "\(number) does not fit in a Float")
        }
    }

    private mutating func checkObject(_ value: BSON, _ property: Property, path: String, code: SchemaViolation.Code) {
        guard let targetName = property.objectClassName, let target = schema[targetName] else {
            report(path, .unknownClass, "the schema has no class named '\(property.objectClassName ?? "")'")
            return
        }
        switch target.kind {
        case .embedded:
            guard case .document(let embedded) = value else {
                report(path, code, "expected an embedded \(targetName) document, found \(value.schemaTypeName)")
                return
            }
            check(embedded, as: target, path: path)
        case .topLevel:
            guard let key = target.primaryKeyProperty else {
                report(path, .unknownClass, "links to \(targetName) are not possible: it has no primary key")
                return
            }
            guard Self.matches(value, key.type) else {
                report(
                    path, code,
                    "expected a link to \(targetName) (its primary key, \(Self.bsonForm(of: key.type))), found \(value.schemaTypeName)")
                return
            }
        case .asymmetric:
            report(path, .unknownClass, "nothing may link to the asymmetric class \(targetName)")
        }
    }

    private mutating func checkMixed(_ value: BSON, path: String, code: SchemaViolation.Code) {
        switch value {
        case .null, .bool, .int32, .int64, .double, .string, .datetime, .decimal128, .objectId:
            return
        case .binary(let binary):
            if binary.subtype == BSONBinary.Subtype.generic { return }
            if binary.subtype == BSONBinary.Subtype.uuid && binary.bytes.count == 16 { return }
            report(
                path, code,
                "a mixed value may be binary data (subtype 0) or a UUID (subtype 4, 16 bytes), not binary subtype \(binary.subtype) of \(binary.bytes.count) bytes"
            )
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                checkMixed(element, path: "\(path)[\(index)]", code: .wrongElementType)
                if full { return }
            }
        case .document(let entries):
            for entry in entries {
                checkMixed(entry.value, path: "\(path).\(entry.key)", code: .wrongElementType)
                if full { return }
            }
        default:
            report(path, code, "a mixed value cannot be a BSON \(value.schemaTypeName)")
        }
    }

    /// Whether a non-null BSON value is an accepted form of a scalar type.
    static func matches(_ value: BSON, _ type: PropertyType) -> Bool {
        switch (type, value) {
        case (.bool, .bool), (.int, .int64), (.int, .int32), (.float, .double), (.double, .double),
            (.string, .string), (.date, .datetime), (.decimal128, .decimal128), (.objectId, .objectId):
            return true
        case (.data, .binary(let binary)):
            return binary.subtype == BSONBinary.Subtype.generic
        case (.uuid, .binary(let binary)):
            return binary.subtype == BSONBinary.Subtype.uuid && binary.bytes.count == 16
        case (.mixed, _):
            return true
        default:
            return false
        }
    }

    /// The BSON form a type is stored as, for messages.
    static func bsonForm(of type: PropertyType) -> String {
        switch type {
        case .bool: return "a boolean"
        case .int: return "an int64 (or int32)"
        case .float, .double: return "a double"
        case .string: return "a string"
        case .data: return "binary data (subtype 0)"
        case .date: return "a datetime"
        case .decimal128: return "a decimal128"
        case .objectId: return "an ObjectId"
        case .uuid: return "a UUID (binary subtype 4, 16 bytes)"
        case .mixed: return "any value"
        case .object: return "an object"
        }
    }
}

extension BSON {
    // The BSON type name as the specification spells it, for messages.
    var schemaTypeName: String {
        switch self {
        case .double: return "double"
        case .string: return "string"
        case .document: return "document"
        case .array: return "array"
        case .binary(let binary): return "binary (subtype \(binary.subtype))"
        case .undefined: return "undefined"
        case .objectId: return "objectId"
        case .bool: return "boolean"
        case .datetime: return "datetime"
        case .null: return "null"
        case .regex: return "regex"
        case .dbPointer: return "dbPointer"
        case .javascript: return "javascript"
        case .symbol: return "symbol"
        case .javascriptWithScope: return "javascriptWithScope"
        case .int32: return "int32"
        case .timestamp: return "timestamp"
        case .int64: return "int64"
        case .decimal128: return "decimal128"
        case .minKey: return "minKey"
        case .maxKey: return "maxKey"
        }
    }
}
