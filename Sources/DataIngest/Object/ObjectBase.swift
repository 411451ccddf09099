import IngestCore

/// The common base of ``Object``, ``EmbeddedObject`` and ``AsymmetricObject``.
/// Do not subclass it directly; `Realm.Configuration.objectTypes` takes
/// `[ObjectBase.Type]`.
///
/// The schema of a class is derived once, from its `@Persisted` properties
/// in declaration order, and cached; no reflection runs per object.
open class ObjectBase {
    /// Creates an unmanaged object with each property's default value.
    public required init() {}

    /// The class name stored in the schema and used as the server's
    /// collection name. Defaults to the Swift type name; override to rename.
    ///
    /// ```swift
    /// override class func className() -> String { "weather_sensor" }
    /// ```
    open class func className() -> String { String(describing: self) }

    /// Maps Swift property names to stored (BSON field) names; properties not
    /// listed keep their Swift name.
    ///
    /// ```swift
    /// @Persisted(primaryKey: true) var id: ObjectId
    /// override class func propertiesMapping() -> [String: String] { ["id": "_id"] }
    /// ```
    open class func propertiesMapping() -> [String: String] { [:] }

    /// The kind of class; fixed by the base class.
    class var _kind: ObjectSchema.Kind { .topLevel }

    /// The schema derived from this class's `@Persisted` properties.
    /// Throws ``RealmError`` when a property cannot be stored.
    public class func objectSchema() throws(RealmError) -> ObjectSchema {
        try TypeSchema.of(self).objectSchema
    }
}

/// An ordinary object: lives in a local (non-synced) realm, can be read,
/// queried, updated and deleted, and can be the target of links (stored as
/// its primary key).
///
/// ```swift
/// class Station: Object {
///     @Persisted(primaryKey: true) var _id: String
///     @Persisted var name: String
/// }
/// ```
open class Object: ObjectBase {
    override class var _kind: ObjectSchema.Kind { .topLevel }
}

/// An object that exists only inside another object (an embedded BSON
/// document). It has no primary key and cannot be linked to.
///
/// ```swift
/// class Location: EmbeddedObject {
///     @Persisted var latitude: Double
///     @Persisted var longitude: Double
/// }
/// ```
open class EmbeddedObject: ObjectBase {
    override class var _kind: ObjectSchema.Kind { .embedded }
}

/// An upload-only object (Data Ingest): created in a synced realm inside
/// `write {}`, kept on the device until the server has it, never read back.
/// It does not inherit from ``Object``, so the typed query API rejects it at
/// compile time.
///
/// ```swift
/// class WeatherSensor: AsymmetricObject {
///     @Persisted(primaryKey: true) var _id: ObjectId
///     @Persisted var deviceId: String
///     @Persisted var temperatureInFahrenheit: Float
/// }
/// ```
open class AsymmetricObject: ObjectBase {
    override class var _kind: ObjectSchema.Kind { .asymmetric }
}
