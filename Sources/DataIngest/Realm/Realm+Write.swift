import IngestCore

extension Realm {
    /// Runs `block` in a write transaction and commits it. If `block` throws,
    /// or a `create` inside it failed, nothing is written and the error is
    /// rethrown. Nested `write` calls throw
    /// ``RealmError/Code/nestedWriteTransaction``.
    ///
    /// ```swift
    /// try realm.write {
    ///     realm.create(WeatherSensor.self, value: ["deviceId": "WX1278UIT", ...])
    /// }
    /// ```
    @discardableResult
    public func write<Result>(_ block: () throws -> Result) throws -> Result {
        try beginWrite()
        let result: Result
        do {
            result = try block()
        } catch {
            cancelWrite()
            throw error
        }
        try commitWrite()
        return result
    }

    /// Starts a write transaction. Prefer ``write(_:)``.
    public func beginWrite() throws(RealmError) {
        if isInWriteTransaction {
            throw RealmError(
                .nestedWriteTransaction, fileURL: fileURL,
                message: "a write transaction is already open on this realm; write {} cannot be nested: move the inner writes into the outer block")
        }
        if let failure = deferredError {
            deferredError = nil
            throw failure
        }
        // A local realm opens its SQLite write transaction alongside.
        if case .local(let store) = backend { try store.beginWrite(realm: self) }
        isInWriteTransaction = true
    }

    /// Commits the open write transaction: a synced realm hands its objects
    /// to the transaction sink (the segment store) as one unit. If a
    /// `create` failed, or the sink throws, nothing is written and the
    /// transaction is rolled back.
    public func commitWrite() throws(RealmError) {
        guard isInWriteTransaction else {
            throw RealmError(
                .notInWriteTransaction, fileURL: fileURL,
                message: "commitWrite() was called with no open write transaction; call beginWrite() first, or use write {}")
        }
        if let failure = deferredError {
            cancelWrite()
            throw failure
        }
        defer { resetTransaction() }
        let sink: any TransactionSink
        switch backend {
        case .local(let store):
            try store.commitWrite(realm: self)
            return
        case .synced(let target):
            sink = target.sink
        }
        guard !transaction.records.isEmpty else { return }
        let count = transaction.records.count
        let encoded = EncodedTransaction(bytes: encoder.bytes, records: transaction.records)
        do {
            try sink.commit(encoded)
        } catch {
            throw RealmError(
                .commitFailed, fileURL: fileURL,
                message: "the transaction of \(count) objects could not be committed and was rolled back: \(error)",
                underlyingError: error)
        }
    }

    /// Discards the open write transaction.
    public func cancelWrite() {
        localStore?.cancelWrite(realm: self)
        deferredError = nil
        resetTransaction()
    }

    private func resetTransaction() {
        encoder.truncate(to: 0)
        transaction.isOpen = false
        transaction.records.removeAll(keepingCapacity: true)
        transaction.keys.removeAll()
    }

    /// Creates an asymmetric object in the open write transaction. `value`
    /// is a `[String: Any]` keyed by property name, an array of values in
    /// property order, or an unmanaged instance. Returns nothing: asymmetric
    /// objects cannot be read back.
    ///
    /// Values are checked against the schema: each must have the property's
    /// type (exact and standard numeric conversions are accepted: an `Int`
    /// or `Double` literal for a `Float`, an integral `Double` for an `Int`),
    /// required properties must be present, unknown names are rejected, and
    /// a primary key may appear once per transaction. Like the seed SDK's,
    /// this call does not throw: the first error fails the transaction, and
    /// `write {}` (or `commitWrite()`) throws it and writes nothing. Outside
    /// a write transaction nothing is written and the next `write {}` throws
    /// ``RealmError/Code/notInWriteTransaction``.
    ///
    /// ```swift
    /// try realm.write {
    ///     realm.create(WeatherSensor.self, value: ["_id": ObjectId.generate(), "deviceId": "WX1278UIT",
    ///                                              "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
    ///                                              "windSpeedInMph": 2])
    /// }
    /// ```
    public func create<T: AsymmetricObject>(_ type: T.Type, value: Any = [String: Any]()) {
        Realm.create(type, value: value, in: &transaction, of: self)
    }

    /// The body of `create`, working on the transaction through one
    /// exclusive access; it must not touch `realm.transaction`.
    private static func create(_ type: ObjectBase.Type, value: Any, in transaction: inout Transaction, of realm: Realm) {
        guard transaction.deferredError == nil else { return } // the transaction has already failed
        do {
            try createRecord(type, value: value, in: &transaction, of: realm)
        } catch {
            transaction.deferredError = error
        }
    }

    private static func createRecord(_ type: ObjectBase.Type, value: Any, in transaction: inout Transaction, of realm: Realm) throws(RealmError) {
        guard transaction.isOpen else {
            throw RealmError(
                .notInWriteTransaction, className: type.className(), fileURL: realm.fileURL,
                message: "create(\(type).self, value:) was called outside a write transaction, so nothing was written; call it inside realm.write { }")
        }
        let typeSchema: TypeSchema
        if let last = transaction.lastCreated, last.type == type {
            typeSchema = last // transactions usually create one type many times
        } else {
            guard let found = realm.writableTypes[ObjectIdentifier(type)] else { throw realm.notWritable(type) }
            typeSchema = found
            transaction.lastCreated = found
        }
        var encoder = realm.encoder
        let start = encoder.count
        do throws(RealmError) {
            let primaryKey = try typeSchema.encodeDocument(createValue: value, path: { typeSchema.className }, into: &encoder)
            if let key = primaryKey,
               !transaction.keys.insert(type: ObjectIdentifier(type), key: key) {
                throw RealmError(
                    .duplicatePrimaryKey, className: typeSchema.className,
                    propertyName: typeSchema.objectSchema.primaryKey,
                    message: "\(typeSchema.className): two objects in one transaction have the primary key \(key.description); give each object its own _id (e.g. ObjectId.generate())")
            }
        } catch {
            encoder.truncate(to: start)
            throw error
        }
        transaction.records.append(EncodedRecord(collection: typeSchema.className, range: start..<encoder.count))
    }

    /// Appends one object of `type` to the open write transaction, encoded
    /// by `encode` straight into the transaction's buffer (one BSON
    /// document, the fields of `type`'s schema). For writers that encode
    /// their own objects on a hot path (the ``LogWriter``); unlike `create`
    /// it does not check the document or primary keys: `encode` must write
    /// a valid document with a unique `_id`. Throws like `create` would.
    func appendEncoded(_ type: ObjectBase.Type, _ encode: (inout BSONRecordEncoder) -> Void) throws(RealmError) {
        guard transaction.isOpen else {
            throw RealmError(
                .notInWriteTransaction, className: type.className(), fileURL: fileURL,
                message: "\(type) was appended outside a write transaction, so nothing was written; append inside realm.write { }")
        }
        guard let typeSchema = writableTypes[ObjectIdentifier(type)] else { throw notWritable(type) }
        var encoder = self.encoder
        let start = encoder.count
        encode(&encoder)
        transaction.records.append(EncodedRecord(collection: typeSchema.className, range: start..<encoder.count))
    }

    private func notWritable(_ type: ObjectBase.Type) -> RealmError {
        let name = type.className()
        if type._kind == .asymmetric && !isSynced {
            return RealmError(
                .asymmetricTypeInLocalRealm, className: name, fileURL: fileURL,
                message: "\(type) is an AsymmetricObject and this is a local realm; create it in a synced realm whose objectTypes include \(type)")
        }
        return RealmError(
            .typeNotInRealm, className: name, fileURL: fileURL,
            message: "\(type) is not part of this realm's schema; add \(type).self to the configuration's objectTypes (or register it with Realm.registerTypes)")
    }
}
