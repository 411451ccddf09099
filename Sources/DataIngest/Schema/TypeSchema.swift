@_spi(Reflection) import Swift
import IngestCore
import IngestSupport

/// Everything DataIngest knows about one object class, derived once from
/// its `@Persisted` fields and cached for the life of the process.
///
/// The field offsets come from the Swift runtime's field metadata
/// (`_forEachField`), read once per class; encoding an object then reads
/// each `Persisted` value at its offset, so no reflection runs per object.
final class TypeSchema {
    let type: ObjectBase.Type
    let objectSchema: ObjectSchema
    let className: String
    let kind: ObjectSchema.Kind
    let codecs: [PropertyCodec]
    /// Swift names and stored names to codec index.
    let codecIndex: [String: Int]
    /// The same names as a list, for matching `create` dictionary keys.
    let createKeys: [CreateKey]
    let primaryKeyIndex: Int?
    /// Holds the declared default values.
    let prototype: ObjectBase
    /// Classes of embedded and link properties.
    let referencedTypes: [ObjectBase.Type]
    /// The `create` fast path's per-property and per-name tables, owned by
    /// `fastTable` and copied out so the hot loops retain nothing.
    let fastProperties: UnsafeMutableBufferPointer<FastProperty>
    let fastKeys: UnsafeMutableBufferPointer<FastKey>
    private let fastTable: FastPropertyTable
    /// Whether `create` reads dictionary values and instances straight out
    /// of their `Any` containers (see ``ExistentialPayload``).
    let readsExistentials: Bool
    /// The metadata word of an `Any` holding an instance of exactly `type`.
    let classWord: UnsafeRawPointer

    private init(type: ObjectBase.Type) throws(RealmError) {
        self.type = type
        className = type.className()
        kind = type._kind
        prototype = type.init()
        let mapping = type.propertiesMapping()
        var codecs: [PropertyCodec] = []
        var failure: RealmError?
        let complete = _forEachField(of: type, options: Self.classFields) { name, offset, fieldType, _ in
            guard let field = fieldType as? PersistedField.Type else { return true }
            var swiftName = String(cString: name)
            // The wrapper's storage is named `_name`.
            if swiftName.hasPrefix("_") { swiftName.removeFirst() }
            let codec = field.makeCodec(swiftName: swiftName, storedName: mapping[swiftName] ?? swiftName, offset: offset)
            codecs.append(codec)
            return true
        }
        guard complete else {
            throw RealmError(
                .unsupportedPropertyType, className: String(describing: type),
                message: "the fields of \(type) cannot be read from the Swift runtime's metadata; declare it as a plain (non-generic) class"
            )
        }
        if PortableFallbacks.areForced {
            try Self.crossCheckFields(codecs, of: type, prototype: prototype)
        }
        for mapped in mapping.keys where !codecs.contains(where: { $0.swiftName == mapped }) {
            failure =
                failure
                ?? RealmError(
                    .unsupportedPropertyType, className: className, propertyName: mapped,
                    message:
                        "\(className).propertiesMapping() maps '\(mapped)', which is not a @Persisted property of \(type); fix the name in propertiesMapping()"
                )
        }
        var properties: [Property] = []
        var referenced: [ObjectBase.Type] = []
        var index: [String: Int] = [:]
        let base = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        for (position, codec) in codecs.enumerated() {
            codec.options = codec.readOptions(base)
            let info = codec.info
            if let reason = info.unsupported {
                failure =
                    failure
                    ?? RealmError(
                        .unsupportedPropertyType, className: className, propertyName: codec.swiftName,
                        message: "\(className).\(codec.swiftName): \(reason)")
            }
            if let target = info.objectType { referenced.append(target) }
            properties.append(
                Property(
                    name: codec.storedName, type: info.type, isOptional: info.isOptional,
                    collection: info.collection, objectClassName: info.objectType?.className(),
                    isIndexed: codec.options.contains(.indexed), isPrimaryKey: codec.options.contains(.primaryKey)))
            index[codec.swiftName] = position
            if index[codec.storedName] == nil { index[codec.storedName] = position }
        }
        if let failure { throw failure }
        self.codecs = codecs
        codecIndex = index
        var createKeys: [CreateKey] = []
        for (position, codec) in codecs.enumerated() {
            createKeys.append(CreateKey(name: codec.swiftName, codec: position, isSwiftName: true))
            if codec.storedName != codec.swiftName {
                createKeys.append(CreateKey(name: codec.storedName, codec: position, isSwiftName: false))
            }
        }
        self.createKeys = createKeys
        fastTable = FastPropertyTable(codecs: codecs)
        fastProperties = fastTable.properties
        fastKeys = fastTable.keys
        readsExistentials = ExistentialPayload.isVerified
        classWord = ExistentialPayload.typeWord(type)
        primaryKeyIndex = codecs.firstIndex(where: { $0.options.contains(.primaryKey) })
        referencedTypes = referenced
        objectSchema = ObjectSchema(className: className, kind: kind, properties: properties)
    }

    /// `_EachFieldOptions.classType` (rawValue 1); spelled by value because
    /// the stdlib declares it as a `static var`, which Swift 6 rejects.
    private static let classFields = _EachFieldOptions(rawValue: 1)

    /// With ``PortableFallbacks`` forced: the `@Persisted` fields
    /// `_forEachField` (standard-library SPI) reported must be the ones
    /// `Mirror` (public API) sees on the prototype, the class's and its
    /// superclasses', so a toolchain whose field metadata reads differently
    /// fails here, at open, with the names, instead of writing wrong data.
    private static func crossCheckFields(
        _ codecs: [PropertyCodec], of type: ObjectBase.Type,
        prototype: ObjectBase
    ) throws(RealmError) {
        var mirrored: [String] = []
        var mirror: Mirror? = Mirror(reflecting: prototype)
        while let current = mirror {
            for child in current.children {
                guard var label = child.label, Swift.type(of: child.value) is PersistedField.Type else { continue }
                if label.hasPrefix("_") { label.removeFirst() }
                mirrored.append(label)
            }
            mirror = current.superclassMirror
        }
        let found = codecs.map(\.swiftName)
        guard Set(found) == Set(mirrored), found.count == mirrored.count else {
            throw RealmError(
                .unsupportedPropertyType, className: String(describing: type),
                message:
                    "the Swift runtime's field metadata of \(type) lists \(found.sorted()), Mirror lists \(mirrored.sorted()); this toolchain is not supported: report it with its version"
            )
        }
    }

    private static let cache = LockedBox<[ObjectIdentifier: TypeSchema]>([:])

    /// The cached schema of `type`, derived on first use.
    static func of(_ type: ObjectBase.Type) throws(RealmError) -> TypeSchema {
        let key = ObjectIdentifier(type)
        if let cached = cache.withLock({ $0[key] }) { return cached }
        // Derive outside the lock: `init()` of the prototype runs app code.
        let derived = try TypeSchema(type: type)
        return cache.withLock { cache in
            if let raced = cache[key] { return raced }
            cache[key] = derived
            return derived
        }
    }
}

/// A name `create(_:value:)` accepts for a property: its Swift name or its
/// stored name. The fast path matches keys against ``FastKey``s; these are
/// for strings without contiguous UTF-8.
struct CreateKey {
    let name: String
    /// The property's index in ``TypeSchema/codecs``.
    let codec: Int
    let isSwiftName: Bool
}
