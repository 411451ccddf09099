/// The schema of one class of objects: its name, kind, primary key and
/// properties in declaration order.
///
/// ```swift
/// let sensor = ObjectSchema(className: "WeatherSensor", kind: .asymmetric, properties: [
///     Property(name: "_id", type: .objectId, isPrimaryKey: true),
///     Property(name: "deviceId", type: .string),
///     Property(name: "temperatureInFahrenheit", type: .float),
/// ])
/// ```
public struct ObjectSchema: Sendable, Hashable {
    /// What kind of class this is.
    public enum Kind: String, Sendable, Hashable, CaseIterable, Codable {
        /// An ordinary object (`Object`): lives in a local realm; may be the
        /// target of links.
        case topLevel
        /// An object that only exists inside another one (`EmbeddedObject`).
        case embedded
        /// An upload-only object (`AsymmetricObject`): written on the device,
        /// streamed to the server, never read back.
        case asymmetric
    }

    /// The class name, also the collection (table) name on the server.
    public var className: String
    /// The kind of class.
    public var kind: Kind
    /// The properties, in declaration order (the order of the array form of
    /// `create(_:value:)`).
    public var properties: [Property]

    /// Creates a schema. The primary key is the property whose
    /// ``Property/isPrimaryKey`` is set.
    public init(className: String, kind: Kind, properties: [Property]) {
        self.className = className
        self.kind = kind
        self.properties = properties
    }

    /// The name of the primary key property, if there is one.
    public var primaryKey: String? { properties.first(where: \.isPrimaryKey)?.name }

    /// The primary key property, if there is one.
    public var primaryKeyProperty: Property? { properties.first(where: \.isPrimaryKey) }

    /// The property stored under `name`.
    public subscript(property name: String) -> Property? {
        properties.first(where: { $0.name == name })
    }
}
