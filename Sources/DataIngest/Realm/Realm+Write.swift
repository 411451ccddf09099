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
                message:
                    "a write transaction is already open on this realm; write {} cannot be nested: move the inner writes into the outer block"
            )
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
        guard !transaction.records.isEmpty || !transaction.cursors.isEmpty else { return }
        let count = transaction.records.count
        do {
            if let session = sink as? SessionTransactionSink {
                // The user's own store reads the encoder's buffer in place:
                // copying it into an EncodedTransaction cost about 250
                // instructions per object (ingest-forward's callgrind profile).
                let (records, cursors) = (transaction.records, transaction.cursors)
                try encoder.withUnsafeBytes { try session.commit(bytes: $0, records: records, cursors: cursors) }
            } else {
                try sink.commit(EncodedTransaction(bytes: encoder.bytes, records: transaction.records, cursors: transaction.cursors))
            }
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
        transaction.cursors.removeAll()
        transaction.keys.removeAll()
    }

    /// Sets the cursor `name` to `value` in the open write transaction: a
    /// small position (at most 64 KiB; the name 1 to 255 UTF-8 bytes) that is
    /// committed with the transaction's objects, durable together with them
    /// or not at all, and read back with ``cursor(named:)`` after any restart
    /// or crash. An empty `value` removes the cursor. A transaction may set
    /// cursors and create no object. Only realms synced through a user's
    /// session keep cursors (their segment store, Docs/SegmentFormat.md); the
    /// server never sees them. Like `create`, it does not throw: an error
    /// (a bad name or size, another backend) fails the transaction at commit.
    ///
    /// ```swift
    /// try realm.write {
    ///     realm.create(ForwardedLine.self, value: line)
    ///     realm.setCursor(Array("812".utf8), named: "app.log")
    /// }
    /// let resumeAt = try realm.cursor(named: "app.log")
    /// ```
    public func setCursor(_ value: [UInt8], named name: String) {
        guard transaction.deferredError == nil else { return }
        guard transaction.isOpen else {
            deferredError = RealmError(
                .notInWriteTransaction, fileURL: fileURL,
                message:
                    "setCursor(_:named:) was called outside a write transaction, so nothing was written; call it inside realm.write { }")
            return
        }
        guard case .synced(.session) = backend else {
            transaction.deferredError = RealmError(
                .cursorsNotSupported, fileURL: fileURL,
                message:
                    "cursors are kept by the segment store of a realm opened from user.flexibleSyncConfiguration(); this realm has no such store"
            )
            return
        }
        let nameCount = name.utf8.count
        guard nameCount >= 1 && nameCount <= 255 && value.count <= 64 << 10 else {
            transaction.deferredError = RealmError(
                .commitFailed, fileURL: fileURL,
                message:
                    "the cursor name must be 1 to 255 UTF-8 bytes (got \(nameCount)) and its value at most 65,536 bytes (got \(value.count))"
            )
            return
        }
        transaction.cursors.append((name, value))
    }

    /// The latest committed value of the cursor `name` (see
    /// ``setCursor(_:named:)``), or `nil` if none was committed or it was
    /// removed. Opens the user's segment store if it is not open yet, which
    /// recovers it after a crash.
    /// - Throws: ``RealmError/Code/cursorsNotSupported`` for a local realm or
    ///   a custom sink; ``RealmError/Code/commitFailed`` if the store cannot be opened.
    public func cursor(named name: String) throws(RealmError) -> [UInt8]? {
        try cursorStore().cursor(named: name)
    }

    /// Every cursor's latest committed value, by name (see ``cursor(named:)``).
    public func cursors() throws(RealmError) -> [String: [UInt8]] {
        try cursorStore().cursors
    }

    private func cursorStore() throws(RealmError) -> SegmentStore {
        guard case .synced(let target) = backend, let session = target.session else {
            throw RealmError(
                .cursorsNotSupported, fileURL: fileURL,
                message:
                    "cursors are kept by the segment store of a realm opened from user.flexibleSyncConfiguration(); this realm has no such store"
            )
        }
        do {
            return try session.openStore()
        } catch {
            throw RealmError(
                .commitFailed, fileURL: fileURL, message: "the segment store could not be opened: \(error)", underlyingError: error)
        }
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
        guard transaction.deferredError == nil else { return }  // the transaction has already failed
        do {
            try createRecord(type, value: value, in: &transaction, of: realm)
        } catch {
            transaction.deferredError = error
        }
    }

    private static func createRecord(_ type: ObjectBase.Type, value: Any, in transaction: inout Transaction, of realm: Realm)
        throws(RealmError)
    {
        guard transaction.isOpen else {
            throw RealmError(
                .notInWriteTransaction, className: type.className(), fileURL: realm.fileURL,
                message:
                    "create(\(type).self, value:) was called outside a write transaction, so nothing was written; call it inside realm.write { }"
            )
        }
        let typeSchema: TypeSchema
        if let last = transaction.lastCreated, last.type == type {
            typeSchema = last  // transactions usually create one type many times
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
                !transaction.keys.insert(type: ObjectIdentifier(type), key: key)
            {
                throw RealmError(
                    .duplicatePrimaryKey, className: typeSchema.className,
                    propertyName: typeSchema.objectSchema.primaryKey,
                    message:
                        "\(typeSchema.className): two objects in one transaction have the primary key \(key.description); give each object its own _id (e.g. ObjectId.generate())"
                )
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
                message:
                    "\(type) is an AsymmetricObject and this is a local realm; create it in a synced realm whose objectTypes include \(type)"
            )
        }
        return RealmError(
            .typeNotInRealm, className: name, fileURL: fileURL,
            message:
                "\(type) is not part of this realm's schema; add \(type).self to the configuration's objectTypes (or register it with Realm.registerTypes)"
        )
    }
}
