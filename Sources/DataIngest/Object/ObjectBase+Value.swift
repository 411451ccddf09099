import IngestCore

extension ObjectBase {
    /// Creates an unmanaged object from `value`, as RealmSwift's
    /// `Object(value:)`: a `[String: Any]` keyed by property name, an array
    /// of values in property order, or another instance of the class.
    /// The value is checked exactly as ``Realm/create(_:value:)`` checks it:
    /// properties it leaves out keep their declared defaults, a required
    /// property without one must be given; embedded objects and lists of
    /// them may be given as dictionaries too.
    ///
    /// ```swift
    /// let settings = try Settings(value: ["_id": "main", "theme": "dark"])
    /// try realm.write { realm.add(settings) }
    /// ```
    ///
    /// Unlike RealmSwift, which raises an exception for a value that does not
    /// fit, it throws (``RealmError/Code/wrongValueType``,
    /// ``RealmError/Code/unknownProperty``, …): a port adds `try`. A link
    /// (an `Object` property) cannot be set from a value here, as there is no
    /// realm to look the target up in: assign it after `init`.
    public convenience init(value: Any) throws(RealmError) {
        self.init()
        let typeSchema = try TypeSchema.of(Swift.type(of: self))
        let resolver = TypeResolver()
        var encoder = BSONRecordEncoder(types: resolver, capacity: 256)
        _ = try typeSchema.encodeDocument(createValue: value, path: { typeSchema.className }, into: &encoder)
        let document: BSONDocument
        do {
            document = try BSONDocument(bson: encoder.bytes)
        } catch {
            throw RealmError(
                .wrongValueType, className: typeSchema.className,
                message: "\(typeSchema.className): the value could not be encoded (\(error))")
        }
        try LocalDecodingContext(resolver: resolver).fill(self, typeSchema, from: document)
    }
}
