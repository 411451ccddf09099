/// A set of object schemas: everything one realm (client) or one app
/// (server) knows about its classes. Embedded classes and link targets are
/// part of the set so that documents can be validated completely.
///
/// ```swift
/// let schema = try Schema([sensorSchema, locationSchema])
/// let violations = schema.validate(document, against: "WeatherSensor")
/// ```
public struct Schema: Sendable, Hashable {
    /// The classes, in the order given.
    public private(set) var objectSchemas: [ObjectSchema]
    private var indexByName: [String: Int]

    /// Creates a set. Throws ``SchemaError/Code/duplicateClassName`` when two
    /// schemas share a class name.
    public init(_ objectSchemas: [ObjectSchema]) throws(SchemaError) {
        var index: [String: Int] = [:]
        for (position, object) in objectSchemas.enumerated() {
            if index[object.className] != nil {
                throw SchemaError(
                    .duplicateClassName, className: object.className,
                    message:
                        "two classes are named '\(object.className)'; class names must be unique: rename one (override className()) or list only one of them"
                )
            }
            index[object.className] = position
        }
        self.objectSchemas = objectSchemas
        self.indexByName = index
    }

    /// The schema of the class named `className`.
    public subscript(className: String) -> ObjectSchema? {
        indexByName[className].map { objectSchemas[$0] }
    }

    /// The class names, in order.
    public var classNames: [String] { objectSchemas.map(\.className) }
}
