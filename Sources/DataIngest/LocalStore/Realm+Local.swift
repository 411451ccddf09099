import Foundation
import IngestCore

extension Realm {
    /// What `add` and `create` do when an object with the same primary key
    /// already exists.
    public enum UpdatePolicy: Sendable, Hashable {
        /// Fail the write transaction with ``RealmError/Code/duplicatePrimaryKey``.
        case error
        /// Update the existing object: the properties given (every property
        /// of an instance; the keys of a dictionary; the positions of an
        /// array) are set, the others keep their values.
        case modified
        /// Same as `.modified` in a local realm (there are no change
        /// notifications to tell the two apart).
        case all
    }

    // MARK: Writing

    /// Adds an unmanaged object to this local realm; it becomes managed:
    /// changes to its properties inside a later `write {}` are saved when
    /// that transaction commits. Adding an object this realm already
    /// manages does nothing.
    ///
    /// Like ``create(_:value:update:)``, this does not throw: the first
    /// error fails the transaction and `write {}` throws it.
    ///
    /// ```swift
    /// let settings = Settings()
    /// settings.theme = "dark"
    /// try realm.write { realm.add(settings) }
    /// try realm.write { settings.fontSize = 14 }   // saved at commit
    /// ```
    ///
    /// Links are stored as the target's primary key; the target is not
    /// added with it: add it too.
    public func add(_ object: Object, update: UpdatePolicy = .error) {
        recordingLocalFailure { () throws(RealmError) in
            let (local, typeSchema) = try localWriteContext(for: type(of: object), operation: "add(_:)")
            if local.rowID(of: object) != nil { return }  // already managed
            let document = try local.encode(object, typeSchema, realm: self)
            let rowID = try storeWrite(local) { access throws(LocalStoreError) in
                try access.insert(document, into: typeSchema.className, replacing: update != .error)
            }
            local.manage(object, typeSchema: typeSchema, rowID: rowID, snapshot: document, added: true)
        }
    }

    /// Adds each object; see ``add(_:update:)``.
    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) where S.Element: Object {
        for object in objects { add(object, update: update) }
    }

    /// Creates an object of an ordinary (`Object`) type in this local realm
    /// and returns it, managed. `value` is a `[String: Any]` keyed by
    /// property name, an array of values in property order, or an unmanaged
    /// instance, checked exactly as for asymmetric types. With `update`
    /// other than `.error`, an existing object with the same primary key is
    /// updated instead (only the properties given).
    ///
    /// Does not throw: the first error fails the transaction and
    /// `write {}` throws it; the object returned then is unmanaged.
    ///
    /// ```swift
    /// try realm.write {
    ///     realm.create(Settings.self, value: ["_id": "main", "theme": "dark"])
    ///     realm.create(Settings.self, value: ["_id": "main", "fontSize": 14], update: .modified)
    /// }
    /// ```
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) -> T {
        var created: T?
        recordingLocalFailure { () throws(RealmError) in
            let (local, typeSchema) = try localWriteContext(for: type, operation: "create(\(type).self, value:)")
            // An update of an existing object sets only the properties given.
            if update != .error, let key = primaryKey(of: value, typeSchema),
                let existing = try storeWrite(
                    local, { access throws(LocalStoreError) in try access.object(typeSchema.className, primaryKey: key) })
            {
                let fields = try encodeGiven(value, typeSchema)
                let row = try storeWrite(local) { access throws(LocalStoreError) -> LocalStoreRow? in
                    _ = try access.update(
                        typeSchema.className, where: SQLFragment(sql: " WHERE rowid = ?", values: [.integer(existing.rowID)]),
                        fields: fields)
                    return try access.object(typeSchema.className, rowID: existing.rowID)
                }
                guard let row else { return }
                let context = LocalDecodingContext(realm: self, access: local.store.writerAccess, local: local)
                created = try context.object(row, typeSchema) as? T
                return
            }
            var encoder = BSONRecordEncoder(types: resolver, capacity: 512)
            _ = try typeSchema.encodeDocument(createValue: value, path: { typeSchema.className }, into: &encoder)
            let document = try decodeEncoded(encoder.bytes, typeSchema)
            let row = try storeWrite(local) { access throws(LocalStoreError) -> LocalStoreRow? in
                let rowID = try access.insert(document, into: typeSchema.className, replacing: false)
                return try access.object(typeSchema.className, rowID: rowID)
            }
            guard let row else { return }
            let context = LocalDecodingContext(realm: self, access: local.store.writerAccess, local: local)
            created = try context.object(row, typeSchema) as? T
        }
        return created ?? T()
    }

    // MARK: Reading

    /// The objects of `type` in this local realm, as a lazily evaluated
    /// query: filter and sort it, then read it with `fetch()`, `count`,
    /// `first`. Asymmetric types are rejected at compile time (they are
    /// not `Object`s).
    ///
    /// ```swift
    /// let open = try realm.objects(Task.self).filter("done == false").sorted(byKeyPath: "priority")
    /// for task in try open.fetch() { print(task.title) }
    /// ```
    public func objects<T: Object>(_ type: T.Type) -> Results<T> {
        Results(realm: self, query: LocalQuery(type.className()))
    }

    /// The object of `type` whose primary key is `key` (an `ObjectId`,
    /// `String`, integer or `UUID`), managed, or nil.
    ///
    /// ```swift
    /// let settings = try realm.object(ofType: Settings.self, forPrimaryKey: "main")
    /// ```
    public func object<T: Object>(ofType type: T.Type, forPrimaryKey key: Any) throws(RealmError) -> T? {
        let (local, typeSchema) = try localContext(for: type)
        guard let bson = BSON.localArgument(key) else {
            throw RealmError(
                .wrongValueType, className: typeSchema.className,
                message:
                    "\(typeSchema.className): \(RealmError.describe(key)) cannot be a primary key; pass an ObjectId, String, integer or UUID"
            )
        }
        return try local.withReadAccess { access throws(RealmError) -> T? in
            let row: LocalStoreRow?
            do throws(LocalStoreError) {
                row = try access.object(typeSchema.className, primaryKey: bson)
            } catch {
                throw RealmError(local: error)
            }
            guard let row else { return nil }
            return try LocalDecodingContext(realm: self, access: access, local: local).object(row, typeSchema) as? T
        }
    }

    /// The objects of the class named `className`, as stored documents: the
    /// dynamic, class-name-based read API. Asymmetric classes throw
    /// ``RealmError/Code/asymmetricObjectNotReadable``.
    ///
    /// ```swift
    /// let rows = try realm.dynamicObjects("Settings", where: "theme == %@", "dark")
    /// ```
    public func dynamicObjects(_ className: String, where predicate: String? = nil, _ arguments: Any...) throws(RealmError)
        -> [BSONDocument]
    {
        let typeSchema = try readableSchema(className: className)
        let (local, _) = try localContext(for: typeSchema.type)
        var query = LocalQuery(className)
        if let predicate {
            do throws(LocalStoreError) {
                query = query.filter(try LocalPredicate(format: predicate, arguments: localArguments(arguments)))
            } catch {
                throw RealmError(local: error)
            }
        }
        return try local.withReadAccess { access throws(RealmError) in
            do throws(LocalStoreError) {
                return try access.objects(query).map(\.document)
            } catch {
                throw RealmError(local: error)
            }
        }
    }

    // MARK: Deleting

    /// Deletes a managed object from this local realm, inside `write {}`.
    /// The instance keeps its values but is no longer managed.
    ///
    /// ```swift
    /// try realm.write { realm.delete(task) }
    /// ```
    public func delete(_ object: Object) {
        recordingLocalFailure { () throws(RealmError) in
            let (local, typeSchema) = try localWriteContext(for: type(of: object), operation: "delete(_:)")
            guard let rowID = local.rowID(of: object) else {
                throw RealmError(
                    .objectNotManaged, className: typeSchema.className, fileURL: fileURL,
                    message:
                        "delete(_:) was given a \(typeSchema.className) that this realm does not manage; delete objects read from or added to this realm"
                )
            }
            _ = try storeWrite(local) { access throws(LocalStoreError) in
                try access.delete(typeSchema.className, where: SQLFragment(sql: " WHERE rowid = ?", values: [.integer(rowID)]))
            }
            local.unmanage(object)
        }
    }

    /// Deletes each object; see ``delete(_:)-(Object)``.
    public func delete<S: Sequence>(_ objects: S) where S.Element: Object {
        for object in objects { delete(object) }
    }

    /// Deletes every object `results` selects, in one SQL statement.
    public func delete<T: Object>(_ results: Results<T>) {
        recordingLocalFailure { () throws(RealmError) in
            let (local, _) = try localWriteContext(for: T.self, operation: "delete(_:)")
            _ = try storeWrite(local) { access throws(LocalStoreError) in try access.delete(results.query) }
        }
    }

    // MARK: Helpers

    /// The local store and class of `type`, for reading.
    func localContext(for type: ObjectBase.Type) throws(RealmError) -> (LocalRealmStore, TypeSchema) {
        guard case .local(let local) = backend else {
            throw RealmError(
                .typeNotInRealm, className: type.className(), fileURL: fileURL,
                message:
                    "\(type) cannot be read from this synced realm: a synced realm holds only upload-only (asymmetric) objects; read \(type) from a local realm"
            )
        }
        guard let typeSchema = writableTypes[ObjectIdentifier(type)] else {
            throw RealmError(
                .typeNotInRealm, className: type.className(), fileURL: fileURL,
                message:
                    "\(type) is not part of this realm's schema; add \(type).self to the configuration's objectTypes (or register it with Realm.registerTypes)"
            )
        }
        return (local, typeSchema)
    }

    /// The local store and class of `type`, for writing: inside `write {}`.
    private func localWriteContext(for type: ObjectBase.Type, operation: String) throws(RealmError) -> (LocalRealmStore, TypeSchema) {
        guard isInWriteTransaction else {
            throw RealmError(
                .notInWriteTransaction, className: type.className(), fileURL: fileURL,
                message: "\(operation) was called outside a write transaction, so nothing was written; call it inside realm.write { }")
        }
        let context = try localContext(for: type)
        guard context.0.inTransaction else {
            throw RealmError(
                .localStoreFailed, className: type.className(), fileURL: fileURL,
                message:
                    "\(operation): the realm's write transaction did not open the local store's transaction; Realm.beginWrite() must call LocalRealmStore.beginWrite(realm:) (see Docs/LocalRealms.md, \"Hook\")"
            )
        }
        return context
    }

    private func storeWrite<Result>(_ local: LocalRealmStore, _ body: (LocalStoreAccess) throws(LocalStoreError) -> Result)
        throws(RealmError) -> Result
    {
        do throws(LocalStoreError) {
            return try body(local.store.writerAccess)
        } catch {
            throw RealmError(local: error)
        }
    }

    /// Runs a non-throwing write API's body; its first error fails the
    /// transaction, as for `create` of asymmetric objects.
    private func recordingLocalFailure(_ body: () throws(RealmError) -> Void) {
        guard deferredError == nil else { return }  // the transaction has already failed
        do {
            try body()
        } catch {
            deferredError = error
        }
    }

    /// The primary key a create value gives, in its stored form.
    private func primaryKey(of value: Any, _ typeSchema: TypeSchema) -> BSON? {
        guard let index = typeSchema.primaryKeyIndex else { return nil }
        let codec = typeSchema.codecs[index]
        if let dictionary = value as? [String: Any] {
            guard let key = dictionary[codec.swiftName] ?? dictionary[codec.storedName] else { return nil }
            return codec.primaryKey(createValue: key)?.bson
        }
        if let object = value as? ObjectBase { return typeSchema.primaryKey(object: object)?.bson }
        if let array = value as? [Any], index < array.count { return codec.primaryKey(createValue: array[index])?.bson }
        return nil
    }

    /// The properties a create value gives (the keys of a dictionary, the
    /// positions of an array, every property of an instance), encoded and
    /// checked as `create` checks them.
    private func encodeGiven(_ value: Any, _ typeSchema: TypeSchema) throws(RealmError) -> BSONDocument {
        var given: [(PropertyCodec, Any)] = []
        if let dictionary = value as? [String: Any] {
            for (key, element) in dictionary {
                guard let index = typeSchema.codecIndex[key] else {
                    throw RealmError.unknownProperty(
                        className: typeSchema.className, path: typeSchema.className, property: key,
                        known: typeSchema.codecs.map(\.swiftName))
                }
                given.append((typeSchema.codecs[index], element))
            }
        } else if let array = value as? [Any], !(value is ObjectBase) {
            for (index, element) in array.enumerated() where index < typeSchema.codecs.count {
                given.append((typeSchema.codecs[index], element))
            }
        } else {
            var encoder = BSONRecordEncoder(types: resolver, capacity: 512)
            _ = try typeSchema.encodeDocument(createValue: value, path: { typeSchema.className }, into: &encoder)
            return try decodeEncoded(encoder.bytes, typeSchema)
        }
        var encoder = BSONRecordEncoder(types: resolver, capacity: 512)
        let start = encoder.beginDocument()
        for (codec, element) in given where !(codec.storedName == typeSchema.objectSchema.primaryKey) {
            try codec.encode(createValue: element, path: { "\(typeSchema.className).\(codec.swiftName)" }, key: codec.key, into: &encoder)
        }
        encoder.endDocument(start)
        return try decodeEncoded(encoder.bytes, typeSchema)
    }

    private func decodeEncoded(_ bytes: [UInt8], _ typeSchema: TypeSchema) throws(RealmError) -> BSONDocument {
        do {
            return try BSONDocument(bson: bytes)
        } catch {
            throw RealmError(
                .localStoreFailed, className: typeSchema.className,
                message: "\(typeSchema.className): the value could not be encoded (\(error))")
        }
    }

    /// Predicate arguments with objects replaced by their primary keys.
    func localArguments(_ arguments: [Any]) -> [Any] {
        arguments.map { argument -> Any in
            if let object = argument as? ObjectBase, let typeSchema = try? resolver.schema(for: type(of: object)),
                let key = typeSchema.primaryKey(object: object)
            {
                return key.bson
            }
            if let array = argument as? [Any] { return localArguments(array) }
            return argument
        }
    }
}

extension PrimaryKeyValue {
    /// The stored BSON form.
    var bson: BSON {
        switch self {
        case .int(let value): return .int64(value)
        case .string(let value): return .string(value)
        case .objectId(let value): return .objectId(value)
        case .uuid(let value):
            return .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: withUnsafeBytes(of: value.uuid) { Array($0) }))
        }
    }
}
