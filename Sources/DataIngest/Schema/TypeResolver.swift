import IngestCore

/// The class schemas one realm uses, looked up without the global lock.
/// Owned by one realm and used on its thread only.
final class TypeResolver {
    private var schemas: [ObjectIdentifier: TypeSchema] = [:]

    init() {}

    /// The schema of `type`, from this resolver or the process-wide cache.
    @inline(__always)
    func schema(for type: ObjectBase.Type) throws(RealmError) -> TypeSchema {
        let key = ObjectIdentifier(type)
        if let known = schemas[key] { return known }
        let derived = try TypeSchema.of(type)
        schemas[key] = derived
        return derived
    }
}
