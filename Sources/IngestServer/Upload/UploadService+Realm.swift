import IngestCore

extension UploadService {
    /// Writes the objects of one Realm sync changeset (one client write
    /// transaction) exactly once: the Realm endpoint's front door to the
    /// same write path as sealed segments (validation against the app's
    /// schema, development-mode growth, one sink transaction for the
    /// accepted objects and the receipt).
    ///
    /// The receipt's key is ``SegmentKey/realm(fileIdent:clientVersion:)``:
    /// a changeset sent again (a client that reconnected before its
    /// acknowledgement) is answered from its receipt and writes nothing.
    ///
    /// ```swift
    /// let key = SegmentKey.realm(fileIdent: 7, clientVersion: 12)
    /// let result = try uploads.ingestRealmChangeset(appId: appId, claims: claims, key: key,
    ///                                               objects: [("SensorReading", bson)], clientSchema: learned,
    ///                                               createdAtMillis: now)
    /// let rejected = try result.answer().rejectedObjects   // index: the object's position in `objects`
    /// ```
    ///
    /// - Parameters:
    ///   - claims: the access token's claims, verified by the caller (at the
    ///     WebSocket upgrade).
    ///   - objects: the changeset's objects in order; a rejected object's
    ///     ``UploadAnswer/RejectedObject/index`` is its position here.
    ///   - rejected: objects of the changeset that build no valid document
    ///     (their `_id` as text and why), indexed after `objects`. Any
    ///     rejection rejects the whole changeset (a write transaction is
    ///     stored whole or not at all); the receipt is written either way.
    ///   - clientSchema: the schema the client's changesets declared
    ///     (development mode learns the exact types from it).
    /// - Throws: ``UploadError`` as ``upload(appId:token:body:)`` (nothing was written).
    package func ingestRealmChangeset(
        appId: String, claims: AccessClaims, key: SegmentKey,
        objects: [(collection: String, bson: [UInt8])],
        rejected: [(collection: String, id: String, reason: String)] = [],
        clientSchema: Schema?, createdAtMillis: Int64
    ) throws(UploadError) -> UploadResult {
        try reportingFailures(appId: appId) { () throws(UploadError) -> UploadResult in
            guard let app = apps[appId] else {
                throw UploadError(.notFound, code: "unknown_app", "no app with id \"\(appId)\" is configured on this server")
            }
            try admit()
            defer { inFlight.withLock { $0 -= 1 } }
            if let stored = try sinkCall(app, { () throws(SinkError) in try app.sink.receipt(for: key) }) {
                app.activity.recordReplay(key: key, claims: claims)
                return replay(stored, appId: appId)
            }
            var records: [SegmentRecord] = []
            records.reserveCapacity(objects.count)
            var bytes = 0
            for (index, object) in objects.enumerated() {
                bytes += object.bson.count
                records.append(SegmentRecord(index: index, collection: object.collection, document: object.bson))
            }
            metrics.uploadBytes.increment([appId, "inflated"], by: Double(bytes))
            var batch = IngestBatch(
                records: records, transactionNumbers: Array(repeating: key.segmentNumber, count: records.count),
                transactionCount: 1, clientSchema: clientSchema, createdAtMillis: createdAtMillis)
            batch.rejectedBefore = rejected.enumerated().map { offset, object in
                UploadAnswer.RejectedObject(
                    index: objects.count + offset, transaction: key.segmentNumber, collection: object.collection,
                    id: object.id, errorCode: "invalidObject", reason: object.reason)
            }
            return try ingest(batch, key: key, into: app, claims: claims)
        }
    }
}

extension SegmentKey {
    /// The receipt key of a Realm client's changeset: the client file
    /// identifier in a store id of its own (RFC 9562 version 8, so it never
    /// equals a DataIngest store's random version 4 id), the changeset's
    /// client version as the segment number.
    ///
    /// ```swift
    /// SegmentKey.realm(fileIdent: 7, clientVersion: 12).description
    /// // "5265616C-6D00-8000-8000-000000000007/12"
    /// ```
    package static func realm(fileIdent: UInt64, clientVersion: UInt64) -> SegmentKey {
        // "Realm" in the first bytes, the version and variant bits, then the file ident.
        var bytes: [UInt8] = [0x52, 0x65, 0x61, 0x6C, 0x6D, 0x00, 0x80, 0x00, 0x80]
        for shift in stride(from: 48, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: fileIdent >> UInt64(shift))) }
        // 16 bytes: the initializer cannot fail.
        return SegmentKey(storeId: SegmentStoreID(bytes: bytes)!, segmentNumber: clientVersion)
    }
}
