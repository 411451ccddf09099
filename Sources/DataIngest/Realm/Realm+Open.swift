import IngestCore

extension Realm {
    struct OpenedSchema {
        var schema: Schema
        /// What a synced realm commits to; `nil` for a local realm.
        var target: SyncTarget?
        var resolver: TypeResolver
        var writable: [ObjectIdentifier: TypeSchema]
        var byName: [String: TypeSchema]
    }

    /// Applies the configuration rules and checks the schema.
    static func resolve(_ configuration: Configuration) throws(RealmError) -> OpenedSchema {
        let sync = configuration.syncConfiguration
        let synced = sync != nil
        if let sync, !sync.isFlexibleSync {
            throw RealmError(
                .partitionSyncNotSupported,
                message:
                    "the synced configuration '\(sync.identifier)' is not flexible sync; Data Ingest is a feature of flexible sync: set isFlexibleSync to true"
            )
        }
        try checkEncryptionKey(configuration)
        let explicit = configuration.objectTypes != nil
        let listed = configuration.objectTypes ?? TypeRegistry.all

        let resolver = TypeResolver()
        var roots: [TypeSchema] = []
        var seen: Set<ObjectIdentifier> = []
        for type in listed where seen.insert(ObjectIdentifier(type)).inserted {
            let kind = type._kind
            if !synced && kind == .asymmetric {
                if !explicit { continue }  // discovery leaves asymmetric types out of local realms
                throw RealmError(
                    .asymmetricTypeInLocalRealm, className: type.className(),
                    message:
                        "\(type) is an AsymmetricObject and cannot be used in a local (non-synced) realm; remove it from this configuration's objectTypes (list only the local types, e.g. objectTypes = [\(exampleLocalTypes(listed))]) and create it in a synced realm"
                )
            }
            if synced && kind == .topLevel {
                if !explicit { continue }  // discovery takes only asymmetric types into synced realms
                throw RealmError(
                    .objectTypeInSyncedRealm, className: type.className(),
                    message:
                        "\(type) is an Object, but a synced realm holds only AsymmetricObject (upload-only) types; keep \(type) in a local realm (a configuration without syncConfiguration) and remove it from this configuration's objectTypes"
                )
            }
            roots.append(try resolver.schema(for: type))
        }

        // Embedded types and link targets are part of the schema too.
        var all = roots
        var index = 0
        while index < all.count {
            for referenced in all[index].referencedTypes where seen.insert(ObjectIdentifier(referenced)).inserted {
                all.append(try resolver.schema(for: referenced))
            }
            index += 1
        }

        var byName: [String: TypeSchema] = [:]
        for typeSchema in all {
            if let other = byName[typeSchema.className] {
                throw RealmError(
                    .duplicateClassName, className: typeSchema.className,
                    message:
                        "\(other.type) and \(typeSchema.type) both have the class name '\(typeSchema.className)'; class names must be unique: override className() in one of them"
                )
            }
            byName[typeSchema.className] = typeSchema
        }

        let schema: Schema
        do {
            schema = try Schema(all.map(\.objectSchema))
            try schema.checkStructure(synced: synced)
        } catch {
            throw RealmError(
                error.code == .unsupportedPropertyType ? .unsupportedPropertyType : .invalidSchema,
                className: error.className, propertyName: error.propertyName,
                message: error.message, underlyingError: error)
        }

        var writable: [ObjectIdentifier: TypeSchema] = [:]
        for typeSchema in all where typeSchema.kind == (synced ? .asymmetric : .topLevel) {
            writable[ObjectIdentifier(typeSchema.type)] = typeSchema
        }

        if let sync, sync.target == nil {
            throw RealmError(
                .missingTransactionSink,
                message:
                    "the synced configuration '\(sync.identifier)' has no transactionSink, so committed objects would have nowhere to go; open synced realms through user.flexibleSyncConfiguration(), or set syncConfiguration.transactionSink"
            )
        }
        // Listed types join discovery only once they have opened cleanly.
        if explicit { TypeRegistry.register(listed) }
        return OpenedSchema(schema: schema, target: sync?.target, resolver: resolver, writable: writable, byName: byName)
    }

    /// `encryptionKey`: refused for local realms (not encrypted by this
    /// release); for synced realms it must be the segment store's key.
    private static func checkEncryptionKey(_ configuration: Configuration) throws(RealmError) {
        guard let key = configuration.encryptionKey else { return }
        let file = configuration.resolvedFileURL
        guard let sync = configuration.syncConfiguration else {
            throw RealmError(
                .encryptionNotSupported, fileURL: file,
                message:
                    "local (non-synced) realms are not encrypted by this release, and this configuration sets encryptionKey; nothing was stored. Remove encryptionKey from the local configuration, or keep the data in a synced realm (its segment store is encrypted with App.Configuration.segmentStore.encryptionKey)"
            )
        }
        do {
            _ = try SegmentEncryptionKey(bytes: key)
        } catch {
            throw RealmError(.invalidEncryptionKey, fileURL: file, message: error.message, underlyingError: error)
        }
        guard case .session(let sink)? = sync.target, let session = sink.session else {
            throw RealmError(
                .encryptionKeyMismatch, fileURL: file,
                message:
                    "encryptionKey is set, but the synced configuration '\(sync.identifier)' commits to a custom transactionSink, which does its own storage and cannot be encrypted by the realm; remove encryptionKey, or open the realm through user.flexibleSyncConfiguration() with App.Configuration.segmentStore.encryptionKey set"
            )
        }
        let storeKey = session.storeEncryptionKey
        guard storeKey == key else {
            let held = storeKey == nil ? "no key" : "another key"
            throw RealmError(
                .encryptionKeyMismatch, fileURL: file,
                message:
                    "encryptionKey differs from the key of the user's segment store (App.Configuration.segmentStore.encryptionKey has \(held)); the synced realm's objects are stored there, so set the same 32-byte key in App.Configuration.segmentStore.encryptionKey (or leave this encryptionKey nil)"
            )
        }
    }

    private static func exampleLocalTypes(_ listed: [ObjectBase.Type]) -> String {
        let local = listed.filter { $0._kind != .asymmetric }.map { "\($0).self" }
        return local.isEmpty ? "MyObject.self" : local.joined(separator: ", ")
    }

    /// The class named `className`, if objects of it can be read. The
    /// dynamic, class-name-based read API goes through this check.
    func readableSchema(className: String) throws(RealmError) -> TypeSchema {
        guard let typeSchema = typesByName[className] else {
            throw RealmError(
                .typeNotInRealm, className: className,
                message: "this realm has no class named '\(className)'; its classes are \(schema.classNames.joined(separator: ", "))")
        }
        switch typeSchema.kind {
        case .asymmetric:
            throw RealmError(
                .asymmetricObjectNotReadable, className: className,
                message:
                    "\(className) is an AsymmetricObject: its objects are upload-only and cannot be read; query the server's database instead"
            )
        case .embedded:
            throw RealmError(
                .typeNotInRealm, className: className,
                message: "\(className) is an EmbeddedObject: read it through the object that embeds it")
        case .topLevel:
            return typeSchema
        }
    }
}
