/// One stored property of an ``ObjectSchema``.
///
/// ```swift
/// let tags = Property(name: "tags", type: .string, collection: .list)
/// let station = Property(name: "station", type: .object, isOptional: true,
///                        objectClassName: "Station")
/// ```
public struct Property: Sendable, Hashable {
    /// The stored name (the BSON field name).
    public var name: String
    /// The value type (for collections: the element type).
    public var type: PropertyType
    /// For a single value: may be null or absent. For a list or map: its
    /// elements may be null. Collections themselves are never null.
    public var isOptional: Bool
    /// Single value, list or map.
    public var collection: CollectionKind
    /// For `.object` properties: the class name of the target.
    public var objectClassName: String?
    /// Whether a secondary index is requested (used by local realms and sinks).
    public var isIndexed: Bool
    /// Whether this is the object's primary key.
    public var isPrimaryKey: Bool

    /// Creates a property description.
    public init(
        name: String, type: PropertyType, isOptional: Bool = false,
        collection: CollectionKind = .single, objectClassName: String? = nil,
        isIndexed: Bool = false, isPrimaryKey: Bool = false
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.collection = collection
        self.objectClassName = objectClassName
        self.isIndexed = isIndexed
        self.isPrimaryKey = isPrimaryKey
    }

    /// A short human description such as `List<String?>` or `Station?`.
    public var typeDescription: String {
        var element = type == .object ? (objectClassName ?? "object") : type.rawValue
        if isOptional { element += "?" }
        switch collection {
        case .single: return element
        case .list: return "List<\(element)>"
        case .map: return "Map<String, \(element)>"
        }
    }
}
