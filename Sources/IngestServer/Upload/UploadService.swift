#if canImport(Glibc)
import Glibc
#endif
import IngestCore
import IngestSupport
import Logging

/// Receives sealed segments and writes their objects exactly once, knowing
/// nothing of HTTP: a front door (the HTTP route in Routes/UploadRoute.swift,
/// later the Realm sync endpoint) passes the app id, the token the client
/// presented and the segment's bytes (the `.seg.gz` file as it is on disk),
/// and maps the result or the ``UploadError`` to its own protocol.
///
/// Steps: authenticate the access token for the app; inflate within the
/// gzip limits; read the segment (only complete transactions: a record
/// after the last commit frame makes the segment malformed); answer a
/// segment received before from its receipt; decode and validate each
/// record (development mode first grows the schema); reject every object of
/// a transaction in which one object is rejected (contract line 3); write the
/// accepted objects and the receipt in one sink transaction; answer with the
/// counts and the rejected objects. Docs/Protocol.md specifies the exchange.
///
/// ```swift
/// let uploads = UploadService(apps: apps, auth: auth, metrics: metrics)
/// do {
///     switch try uploads.upload(appId: "weather", token: .bearer(accessToken), body: segmentBytes) {
///     case .stored(let answer, let body): send(body)          // answer.rejectedObjects: quarantine those
///     case .replayed(let body): send(body)                    // the same bytes as the first time
///     }
/// } catch {
///     send(error.kind, error.code, error.message)            // e.g. .unauthenticated, "expired_token"
/// }
/// ```
///
/// Safe from any thread; at most ``Configuration/maxConcurrentUploads``
/// uploads are processed at once (more fail as `overloaded`).
package final class UploadService: Sendable {
    /// Limits of the upload service, each with a documented default.
    package struct Configuration: Sendable {
        /// Inflation limits against decompression bombs: at most 256 MiB
        /// inflated and a ratio of 200:1 past 1 MiB by default. Exceeding
        /// them fails with `inflate_limit_exceeded`.
        package var gzipLimits = GzipLimits()
        /// Uploads processed at once; more fail as `overloaded` (`too_many_uploads`). Default 16.
        package var maxConcurrentUploads = 16
        /// The retry delay given with `overloaded` and `unavailable`, in seconds. Default 1.
        package var retryAfterSeconds = 1

        /// Creates the default configuration.
        package init() {}
    }

    /// The apps by id.
    package let apps: [String: IngestApp]
    let auth: AuthService
    let metrics: IngestMetrics
    let configuration: Configuration
    let inFlight = LockedBox(0)
    let logger: Logger

    /// Creates the service.
    ///
    /// - Parameter logger: where failures of the server's side (sink errors,
    ///   refused schema changes) are logged. Default: swift-log's
    ///   bootstrapped handler, label `ingest-server.upload`.
    package init(
        apps: [IngestApp], auth: AuthService, metrics: IngestMetrics,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "ingest-server.upload")
    ) {
        var byId: [String: IngestApp] = [:]
        for app in apps { byId[app.id] = app }
        self.apps = byId
        self.auth = auth
        self.metrics = metrics
        self.configuration = configuration
        self.logger = logger
    }

    /// Processes one upload of a sealed segment for `appId`.
    ///
    /// - Parameters:
    ///   - appId: the app the client uploads to (checked first: an unknown
    ///     app fails with `unknown_app`, whatever the token).
    ///   - token: the access token the client presented; ``PresentedToken/missing``
    ///     and ``PresentedToken/malformed`` fail with `missing_token`.
    ///   - body: the sealed segment as it is on disk (gzip).
    /// - Returns: ``UploadResult/stored(_:body:)`` with the answer written
    ///   with the receipt, or ``UploadResult/replayed(body:)`` with the
    ///   answer stored the first time (nothing written).
    /// - Throws: ``UploadError``; nothing of the segment was written:
    ///   `.notFound` `unknown_app`; `.unauthenticated` `missing_token`,
    ///   `invalid_token`, `expired_token`; `.forbidden` `wrong_app`;
    ///   `.overloaded` `too_many_uploads`; `.invalidRequest` `empty_body`,
    ///   `malformed_gzip`, `malformed_segment`, `unsupported_segment_version`;
    ///   `.tooLarge` `inflate_limit_exceeded`, `frame_too_large`;
    ///   `.unavailable` `sink_unavailable`; `.failed` `sink_error`.
    package func upload(appId: String, token: PresentedToken, body: [UInt8]) throws(UploadError) -> UploadResult {
        try reportingFailures(appId: appId) { () throws(UploadError) in try process(appId: appId, token: token, body: body) }
    }

    /// Runs one upload of any front door: a failure of the server's side is
    /// logged, and every failure is recorded for the status page, then rethrown.
    func reportingFailures(appId: String, _ body: () throws(UploadError) -> UploadResult) throws(UploadError) -> UploadResult {
        do {
            return try body()
        } catch {
            switch error.kind {
            case .failed:
                logger.error(
                    "upload to app \(appId) failed: \(error.message)", metadata: ["app": "\(appId)", "error_code": "\(error.code)"])
            case .unavailable:
                logger.warning(
                    "upload to app \(appId) failed: \(error.message)", metadata: ["app": "\(appId)", "error_code": "\(error.code)"])
            default: break
            }
            apps[appId]?.activity.recordFailure(
                status: error.kind.statusCode, code: error.code, message: error.message,
                sinkFailure: error.code == "sink_unavailable" || error.code == "sink_error")
            throw error
        }
    }

    private func process(appId: String, token: PresentedToken, body: [UInt8]) throws(UploadError) -> UploadResult {
        guard let app = apps[appId] else {
            throw UploadError(.notFound, code: "unknown_app", "no app with id \"\(appId)\" is configured on this server")
        }
        let claims = try authenticate(token, appId: appId)
        try admit()
        defer { inFlight.withLock { $0 -= 1 } }

        guard !body.isEmpty else {
            throw UploadError(.invalidRequest, code: "empty_body", "the request body is empty; send a sealed segment (.seg.gz)")
        }
        let segment = try ParsedSegment(gzip: body, limits: configuration.gzipLimits)
        metrics.uploadBytes.increment([appId, "compressed"], by: Double(body.count))
        metrics.uploadBytes.increment([appId, "inflated"], by: Double(segment.inflatedBytes))

        let key = SegmentKey(storeId: segment.header.storeId, segmentNumber: segment.header.segmentNumber)
        if let stored = try sinkCall(app, { () throws(SinkError) in try app.sink.receipt(for: key) }) {
            app.activity.recordReplay(key: key, claims: claims)
            return replay(stored, appId: appId)
        }
        if let schemaError = segment.schemaError { throw schemaError }
        return try ingest(segment.batch, key: key, into: app, claims: claims)
    }

    /// Counts an upload in, or fails as `overloaded` when
    /// ``Configuration/maxConcurrentUploads`` are in flight; the caller
    /// counts it out (`inFlight -= 1`) when done.
    func admit() throws(UploadError) {
        let admitted = inFlight.withLock { count -> Bool in
            guard count < configuration.maxConcurrentUploads else { return false }
            count += 1
            return true
        }
        guard admitted else {
            throw UploadError(
                .overloaded, code: "too_many_uploads",
                "the server is processing \(configuration.maxConcurrentUploads) uploads; retry after the Retry-After delay",
                retryAfterSeconds: configuration.retryAfterSeconds)
        }
    }

    private func authenticate(_ token: PresentedToken, appId: String) throws(UploadError) -> AccessClaims {
        let presented: String
        switch token {
        case .missing:
            throw UploadError(
                .unauthenticated, code: "missing_token",
                "send the access token as \"Authorization: Bearer <access_token>\"")
        case .malformed:
            throw UploadError(
                .unauthenticated, code: "missing_token",
                "the Authorization header must be \"Bearer <access_token>\"")
        case .bearer(let value):
            presented = value
        }
        do {
            return try auth.verifyAccessToken(presented, appId: appId)
        } catch {
            throw UploadError(error.kind, code: error.code.rawValue, error.message)
        }
    }

    func replay(_ stored: [UInt8], appId: String) -> UploadResult {
        metrics.replays.increment([appId])
        return .replayed(body: stored)
    }

    /// Validates the records of `segment` and writes the accepted ones with
    /// the receipt for `key` in one sink transaction (every front door's
    /// write path: sealed segments, Realm changesets).
    func ingest(
        _ segment: IngestBatch, key: SegmentKey, into app: IngestApp,
        claims: AccessClaims
    ) throws(UploadError) -> UploadResult {
        let records = segment.records
        // Most records are proven valid straight from their bytes against the
        // current schema, without building a document. The others are decoded
        // and go through development-mode growth and the full validation,
        // which words the violations. Growth is additive, so a record proven
        // valid stays valid against a grown schema, and needs nothing added.
        let current = app.schema
        var proven = [Bool](repeating: false, count: records.count)
        // Where the check found each proven record's properties, so that the
        // sink need not walk the record again: `spans[spanStarts[i]...]`, in
        // the order of `propertyLists[spanLists[i]]`.
        var spans: [BSONElementSpan] = []
        var spanStarts = [Int](repeating: -1, count: records.count)
        var spanLists = [Int](repeating: -1, count: records.count)
        var propertyLists: [[String]] = []
        let locatesFields = app.sink.readsFields
        // Consecutive records mostly share a collection: its check is
        // prepared once per run, as a constant, and the records are read in
        // place (a copy of the check or of a record per record retained and
        // released their arrays and strings).
        records.withUnsafeBufferPointer { records in
            records.forEachRun(of: \.collection) { collection, run in
                guard let check = current[collection].flatMap({ $0.kind == .asymmetric ? ObjectSchema.QuickCheck($0) : nil })
                else { return }
                guard locatesFields else {
                    for position in run {
                        proven[position] = records[position].document.withUnsafeBytes { check.isCertainlyValid(bson: $0) }
                    }
                    return
                }
                let propertyCount = check.propertyNames.count
                if spans.isEmpty { spans.reserveCapacity(records.count * propertyCount) }
                let list = propertyLists.count
                propertyLists.append(check.propertyNames)
                for position in run {
                    let start = spans.count
                    for _ in 0..<propertyCount { spans.append(.absent) }
                    let valid = records[position].document.withUnsafeBytes { raw in
                        spans.withUnsafeMutableBufferPointer { all in
                            check.isCertainlyValid(bson: raw, spans: UnsafeMutableBufferPointer(rebasing: all[start...]))
                        }
                    }
                    proven[position] = valid
                    if valid {
                        spanStarts[position] = start
                        spanLists[position] = list
                    } else {
                        spans.removeSubrange(start...)
                    }
                }
            }
        }
        let spanStorage = SinkFieldSpans(spans: spans, propertyLists: propertyLists)
        func sinkObject(_ position: Int) -> SinkObject {
            let record = records[position]
            let start = spanStarts[position]
            return SinkObject(
                collection: record.collection, bson: record.document,
                fields: start < 0 ? nil : SinkFields(storage: spanStorage, start: start, list: spanLists[position]))
        }

        // Decode the rest; an undecodable one is rejected, not fatal.
        var decoded: [(position: Int, document: BSONDocument)] = []
        var rejections: [Int: UploadAnswer.RejectedObject] = [:]
        for position in records.indices where !proven[position] {
            let record = records[position]
            do {
                decoded.append((position, try BSONDocument(bson: record.document)))
            } catch {
                rejections[position] = UploadAnswer.RejectedObject(
                    index: record.index, transaction: segment.transactionNumbers[position], collection: record.collection,
                    id: nil, errorCode: "invalidBSON", reason: "the record is not a valid BSON document: \(error.description)")
            }
        }
        let schema: Schema
        if decoded.isEmpty {
            schema = current
        } else {
            let valid = decoded.map { (collection: records[$0.position].collection, document: $0.document) }
            schema = try sinkCall(
                app,
                { () throws(SinkError) in
                    try app.schemaForUpload(records: valid, clientSchema: segment.clientSchema, logger: logger)
                })
        }
        for (position, document) in decoded {
            let record = records[position]
            if let reason = Self.check(document, collection: record.collection, schema: schema, app: app) {
                rejections[position] = UploadAnswer.RejectedObject(
                    index: record.index, transaction: segment.transactionNumbers[position], collection: record.collection,
                    id: document["_id"]?.extendedJSON(.relaxed), errorCode: reason.code, reason: reason.reason)
            }
        }

        var objects: [SinkObject] = []
        objects.reserveCapacity(records.count - rejections.count)
        var allRejections: [UploadAnswer.RejectedObject] = []
        if rejections.isEmpty && segment.rejectedBefore.isEmpty {
            for position in records.indices { objects.append(sinkObject(position)) }
        } else {
            // A transaction is all or nothing: one rejected object rejects the rest of it.
            var rejectedTransactions: [UInt64: Int] = [:]
            for rejection in segment.rejectedBefore where rejectedTransactions[rejection.transaction] == nil {
                rejectedTransactions[rejection.transaction] = rejection.index
            }
            allRejections = segment.rejectedBefore
            for position in rejections.keys.sorted() {
                let rejection = rejections[position]!
                if rejectedTransactions[rejection.transaction] == nil { rejectedTransactions[rejection.transaction] = rejection.index }
            }
            var documents: [Int: BSONDocument] = [:]
            for (position, document) in decoded { documents[position] = document }
            for (position, record) in records.enumerated() {
                let transaction = segment.transactionNumbers[position]
                if let rejection = rejections[position] {
                    allRejections.append(rejection)
                } else if let culprit = rejectedTransactions[transaction] {
                    // Proven records were not decoded: decode for the `_id` of the report.
                    let id = documents[position]?["_id"] ?? (try? BSONDocument(bson: record.document))?["_id"]
                    allRejections.append(
                        UploadAnswer.RejectedObject(
                            index: record.index, transaction: transaction, collection: record.collection,
                            id: id?.extendedJSON(.relaxed), errorCode: "transactionRejected",
                            reason:
                                "object \(culprit) of the same write transaction was rejected; a transaction is stored whole or not at all")
                    )
                } else {
                    objects.append(sinkObject(position))
                }
            }
        }

        let started = monotonicSeconds()
        var duplicateCount = 0
        var answer: UploadAnswer?
        let result = try sinkCall(
            app,
            { () throws(SinkError) in
                try app.sink.write(objects, receipt: key) { duplicates in
                    duplicateCount = duplicates.lazy.filter { $0 }.count
                    let written = UploadAnswer(
                        storeId: key.storeId.uuidString, segmentNumber: key.segmentNumber,
                        transactions: segment.transactionCount, objects: segment.records.count + segment.rejectedBefore.count,
                        accepted: objects.count - duplicateCount, duplicate: duplicateCount, rejectedObjects: allRejections)
                    answer = written
                    return written.jsonBody
                }
            })
        switch result {
        case .alreadyReceived(let stored):
            app.activity.recordReplay(key: key, claims: claims)
            return replay(stored, appId: app.id)
        case .written(let duplicates, let body):
            let seconds = monotonicSeconds() - started
            metrics.sinkWriteDuration.observe(seconds, [app.id])
            metrics.segmentLag.observe(Double(Self.nowMillis() - segment.createdAtMillis) / 1000, [app.id])
            app.activity.recordStored(
                key: key, claims: claims, objects: objects, duplicates: duplicates, rejections: allRejections,
                createdAtMillis: segment.createdAtMillis, writeSeconds: seconds)
            let accepted = objects.count - duplicateCount
            metrics.objects.increment([app.id, "accepted"], by: Double(accepted))
            metrics.objects.increment([app.id, "duplicate"], by: Double(duplicateCount))
            metrics.objects.increment([app.id, "rejected"], by: Double(allRejections.count))
            guard let answer = answer ?? (try? UploadAnswer(jsonBody: body)) else {
                // The sink wrote without asking for the answer: a broken Sink.
                throw UploadError(.failed, code: "sink_error", "the app's sink stored the segment without its answer; report this")
            }
            return .stored(answer, body: body)
        }
    }

    /// Why `document` cannot go into `collection`, or nil if it can.
    static func check(
        _ document: BSONDocument, collection: String, schema: Schema,
        app: IngestApp
    ) -> (code: String, reason: String)? {
        guard let object = schema[collection] else {
            let hint =
                app.configuration.developmentMode
                ? "the name is not a valid collection name or the object has no usable _id"
                : "declare it in the app's schema (or run the app in development mode)"
            return ("unknownClass", "app \(app.id) has no collection \(collection); \(hint)")
        }
        guard object.kind == .asymmetric else {
            return ("notAsymmetric", "\(collection) is an embedded type, not a collection that accepts uploads")
        }
        let violations = object.validate(document, in: schema)
        guard let first = violations.first else { return nil }
        return (first.code.rawValue, violations.map(\.description).joined(separator: "; "))
    }

    func sinkCall<T>(_ app: IngestApp, _ body: () throws(SinkError) -> T) throws(UploadError) -> T {
        do {
            return try body()
        } catch {
            if error.isTransient {
                throw UploadError(
                    .unavailable, code: "sink_unavailable",
                    "the app's database is busy or full (\(error.message)); retry after the Retry-After delay",
                    retryAfterSeconds: configuration.retryAfterSeconds)
            }
            throw UploadError(
                .failed, code: "sink_error",
                "the app's database failed: \(error.message); retry later")
        }
    }
}

extension UploadService {
    /// Milliseconds since 1970 (the clock segment creation times are compared with).
    static func nowMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

/// Seconds from an arbitrary origin, for durations.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
