import IngestCore

extension ConfigSchema {
    /// The app's configured schema in IngestCore's shared model, the form
    /// uploads are validated against (`Schema.validate(_:against:)`).
    ///
    /// Sets (`string<>`) become lists: the shared model has no set kind and
    /// both arrive as BSON arrays. `_id` of an asymmetric type is its primary key.
    ///
    /// ```swift
    /// let schema = try app.schema.coreSchema()
    /// schema.validate(document, against: "WeatherSensor")
    /// ```
    package func coreSchema() throws(SchemaError) -> Schema {
        try Schema(
            objectTypes.map { type in
                ObjectSchema(
                    className: type.name, kind: type.kind == .asymmetric ? .asymmetric : .embedded,
                    properties: type.properties.map { property -> IngestCore.Property in
                        var target: String?
                        let kind: PropertyType
                        switch property.type {
                        case .bool: kind = .bool
                        case .int: kind = .int
                        case .float: kind = .float
                        case .double: kind = .double
                        case .string: kind = .string
                        case .data: kind = .data
                        case .date: kind = .date
                        case .decimal128: kind = .decimal128
                        case .objectId: kind = .objectId
                        case .uuid: kind = .uuid
                        case .mixed: kind = .mixed
                        case .object(let name):
                            kind = .object
                            target = name
                        }
                        let collection: CollectionKind =
                            switch property.collection {
                            case .single: .single
                            case .list, .set: .list
                            case .map: .map
                            }
                        return IngestCore.Property(
                            name: property.name, type: kind, isOptional: property.isOptional,
                            collection: collection, objectClassName: target,
                            isPrimaryKey: type.kind == .asymmetric && property.name == "_id")
                    })
            })
    }
}
