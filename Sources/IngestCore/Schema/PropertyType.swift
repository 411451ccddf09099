/// The type of a stored property, as the schema carries it between client
/// and server.
///
/// How each type is stored in BSON (the client always writes the first form;
/// the server's ``ObjectSchema/validate(_:in:)`` accepts exactly the forms
/// listed):
///
/// | type | BSON | accepted on upload |
/// | --- | --- | --- |
/// | `bool` | boolean | boolean |
/// | `int` | int64 | int64, int32 |
/// | `float` | double (the exact Float value, widened) | double within Float's range |
/// | `double` | double | double |
/// | `string` | string | string |
/// | `data` | binary, subtype 0 | binary subtype 0 |
/// | `date` | datetime (ms since epoch) | datetime |
/// | `decimal128` | decimal128 | decimal128 |
/// | `objectId` | ObjectId | ObjectId |
/// | `uuid` | binary, subtype 4, 16 bytes | the same |
/// | `mixed` | any of the forms above, null, a document or an array | the same |
/// | `object` (embedded target) | embedded document | a document valid against the target |
/// | `object` (link target) | the target's primary key value | a value of the target's primary key type |
public enum PropertyType: String, Sendable, Hashable, CaseIterable, Codable {
    case bool
    /// All Swift integer widths; stored as a 64-bit integer.
    case int
    case float
    case double
    case string
    case data
    case date
    case decimal128
    case objectId
    case uuid
    /// Any value (the seed SDK's `AnyRealmValue`).
    case mixed
    /// An embedded object or a link, depending on the kind of the target
    /// class named by ``Property/objectClassName``.
    case object

    /// Types that can be a primary key.
    public var canBePrimaryKey: Bool {
        switch self {
        case .int, .string, .objectId, .uuid: return true
        default: return false
        }
    }

    /// Types that can carry a secondary index.
    public var canBeIndexed: Bool {
        switch self {
        case .bool, .int, .string, .date, .objectId, .uuid, .mixed: return true
        default: return false
        }
    }
}

/// Whether a property holds one value or a collection of them.
public enum CollectionKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// One value.
    case single
    /// An ordered list, stored as a BSON array.
    case list
    /// A map from string keys to values, stored as an embedded BSON document.
    case map
}
