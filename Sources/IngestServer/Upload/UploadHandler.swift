#if canImport(Glibc)
import Glibc
#endif
import IngestCore
import IngestSupport

/// `POST /api/client/v2.0/app/{appId}/ingest`: receives one sealed segment
/// (the `.seg.gz` file as it is on disk), and writes its objects exactly once.
///
/// Steps: authenticate the bearer access token for `{appId}`; inflate within
/// the gzip limits; read the segment (only complete transactions: a record
/// after the last commit frame makes the segment malformed); answer a
/// segment received before from its receipt; decode and validate each
/// record (development mode first grows the schema); reject every object of
/// a transaction in which one object is rejected (contract line 3); write the
/// accepted objects and the receipt in one sink transaction; answer with the
/// counts and the rejected objects. Docs/Protocol.md specifies the exchange.
///
/// ```swift
/// let uploads = UploadHandler(apps: apps, auth: auth, metrics: metrics)
/// router.post("/api/client/v2.0/app/{appId}/ingest", uploads.handle)
/// ```
package final class UploadHandler: Sendable {
    /// Limits of the upload endpoint, each with a documented default.
    package struct Configuration: Sendable {
        /// Inflation limits against decompression bombs: at most 256 MiB
        /// inflated and a ratio of 200:1 past 1 MiB by default. Exceeding
        /// them answers 413 `inflate_limit_exceeded`.
        package var gzipLimits = GzipLimits()
        /// Uploads processed at once; more answer 429 with `Retry-After`. Default 16.
        package var maxConcurrentUploads = 16
        /// The `Retry-After` seconds sent with 429 and 503. Default 1.
        package var retryAfterSeconds = 1

        /// Creates the default configuration.
        package init() {}
    }

    /// The apps by id.
    package let apps: [String: IngestApp]
    let auth: AuthService
    let metrics: IngestMetrics
    let configuration: Configuration
    private let inFlight = LockedBox(0)
    private let log: (@Sendable (String) -> Void)?

    /// Creates the handler.
    package init(apps: [IngestApp], auth: AuthService, metrics: IngestMetrics,
                configuration: Configuration = Configuration(), log: (@Sendable (String) -> Void)? = nil) {
        var byId: [String: IngestApp] = [:]
        for app in apps { byId[app.id] = app }
        self.apps = byId
        self.auth = auth
        self.metrics = metrics
        self.configuration = configuration
        self.log = log
    }

    /// Handles one upload request; never throws (errors become JSON responses).
    @Sendable
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        let appId = request.pathParameters["appId"] ?? ""
        let response: HTTPResponse
        do {
            response = try process(request, appId: appId)
        } catch {
            response = error.response
            if error.status.code >= 500 { log?("upload to app \(appId) failed: \(error.message)") }
            apps[appId]?.activity.recordFailure(status: error.status.code, code: error.code, message: error.message,
                                                sinkFailure: error.code == "sink_unavailable" || error.code == "sink_error")
        }
        if apps[appId] != nil { metrics.uploads.increment([appId, String(response.status.code)]) }
        return response
    }

    private func process(_ request: HTTPRequest, appId: String) throws(UploadError) -> HTTPResponse {
        guard let app = apps[appId] else {
            throw UploadError(.notFound, code: "unknown_app", "no app with id \"\(appId)\" is configured on this server")
        }
        let claims = try authenticate(request, appId: appId)
        let admitted = inFlight.withLock { count -> Bool in
            guard count < configuration.maxConcurrentUploads else { return false }
            count += 1
            return true
        }
        guard admitted else {
            throw UploadError(.tooManyRequests, code: "too_many_uploads",
                              "the server is processing \(configuration.maxConcurrentUploads) uploads; retry after the Retry-After delay",
                              retryAfterSeconds: configuration.retryAfterSeconds)
        }
        defer { inFlight.withLock { $0 -= 1 } }

        guard !request.body.isEmpty else {
            throw UploadError(.badRequest, code: "empty_body", "the request body is empty; send a sealed segment (.seg.gz)")
        }
        let segment = try ParsedSegment(gzip: request.body, limits: configuration.gzipLimits)
        metrics.uploadBytes.increment([appId, "compressed"], by: Double(request.body.count))
        metrics.uploadBytes.increment([appId, "inflated"], by: Double(segment.inflatedBytes))

        let key = SegmentKey(storeId: segment.header.storeId, segmentNumber: segment.header.segmentNumber)
        if let stored = try sinkCall(app, { () throws(SinkError) in try app.sink.receipt(for: key) }) {
            app.activity.recordReplay(key: key, claims: claims)
            return replay(stored, appId: appId)
        }
        if let schemaError = segment.schemaError { throw schemaError }
        return try ingest(segment, key: key, into: app, claims: claims)
    }

    private func authenticate(_ request: HTTPRequest, appId: String) throws(UploadError) -> AccessClaims {
        guard let header = request.headers["authorization"] else {
            throw UploadError(.unauthorized, code: "missing_token",
                              "send the access token as \"Authorization: Bearer <access_token>\"")
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw UploadError(.unauthorized, code: "missing_token",
                              "the Authorization header must be \"Bearer <access_token>\"")
        }
        do {
            return try auth.verifyAccessToken(String(parts[1].trimmingHTTPWhitespace()), appId: appId)
        } catch {
            throw UploadError(HTTPStatus(code: error.httpStatus), code: error.code.rawValue, error.message)
        }
    }

    private func replay(_ stored: [UInt8], appId: String) -> HTTPResponse {
        metrics.replays.increment([appId])
        var response = HTTPResponse.json(stored)
        response.headers.add(name: "DataIngest-Replayed", value: "true")
        return response
    }

    private func ingest(_ segment: ParsedSegment, key: SegmentKey, into app: IngestApp,
                        claims: AccessClaims) throws(UploadError) -> HTTPResponse {
        let records = segment.records
        // Most records are proven valid straight from their bytes against the
        // current schema, without building a document. The others are decoded
        // and go through development-mode growth and the full validation,
        // which words the violations. Growth is additive, so a record proven
        // valid stays valid against a grown schema, and needs nothing added.
        let current = app.schema
        var proven = [Bool](repeating: false, count: records.count)
        // Consecutive records mostly share a collection: prepare its check once per run.
        var lookedUp: (collection: String, check: ObjectSchema.QuickCheck?)?
        for (position, record) in records.enumerated() {
            let check: ObjectSchema.QuickCheck?
            if let lookedUp, lookedUp.collection == record.collection {
                check = lookedUp.check
            } else {
                check = current[record.collection].flatMap { $0.kind == .asymmetric ? ObjectSchema.QuickCheck($0) : nil }
                lookedUp = (record.collection, check)
            }
            guard let check else { continue }
            proven[position] = check.isCertainlyValid(bson: record.document)
        }

        // Decode the rest; an undecodable one is rejected, not fatal.
        var decoded: [(position: Int, document: BSONDocument)] = []
        var rejections: [Int: UploadReport.Rejection] = [:]
        for (position, record) in records.enumerated() where !proven[position] {
            do {
                decoded.append((position, try BSONDocument(bson: record.document)))
            } catch {
                rejections[position] = UploadReport.Rejection(
                    index: record.index, transaction: segment.transactionNumbers[position], collection: record.collection,
                    id: nil, code: "invalidBSON", reason: "the record is not a valid BSON document: \(error.description)")
            }
        }
        let schema: Schema
        if decoded.isEmpty {
            schema = current
        } else {
            let valid = decoded.map { (collection: records[$0.position].collection, document: $0.document) }
            schema = try sinkCall(app, { () throws(SinkError) in
                try app.schemaForUpload(records: valid, clientSchema: segment.clientSchema, log: log)
            })
        }
        for (position, document) in decoded {
            let record = records[position]
            if let reason = Self.check(document, collection: record.collection, schema: schema, app: app) {
                rejections[position] = UploadReport.Rejection(
                    index: record.index, transaction: segment.transactionNumbers[position], collection: record.collection,
                    id: document["_id"], code: reason.code, reason: reason.reason)
            }
        }

        var objects: [SinkObject] = []
        objects.reserveCapacity(records.count - rejections.count)
        var allRejections: [UploadReport.Rejection] = []
        if rejections.isEmpty {
            for record in records { objects.append(SinkObject(collection: record.collection, bson: record.document)) }
        } else {
            // A transaction is all or nothing: one rejected object rejects the rest of it.
            var rejectedTransactions: [UInt64: Int] = [:]
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
                    allRejections.append(UploadReport.Rejection(
                        index: record.index, transaction: transaction, collection: record.collection, id: id,
                        code: "transactionRejected",
                        reason: "object \(culprit) of the same write transaction was rejected; a transaction is stored whole or not at all"))
                } else {
                    objects.append(SinkObject(collection: record.collection, bson: record.document))
                }
            }
        }

        let started = monotonicSeconds()
        var duplicateCount = 0
        let result = try sinkCall(app, { () throws(SinkError) in
            try app.sink.write(objects, receipt: key) { duplicates in
                duplicateCount = duplicates.lazy.filter { $0 }.count
                return UploadReport(key: key, transactionCount: segment.transactionCount, objectCount: segment.records.count,
                                    accepted: objects.count - duplicateCount, duplicate: duplicateCount,
                                    rejections: allRejections).json
            }
        })
        switch result {
        case .alreadyReceived(let stored):
            app.activity.recordReplay(key: key, claims: claims)
            return replay(stored, appId: app.id)
        case .written(let duplicates, let body):
            let seconds = monotonicSeconds() - started
            metrics.sinkWriteDuration.observe(seconds, [app.id])
            metrics.segmentLag.observe(Double(Self.nowMillis() - segment.header.createdAtMillis) / 1000, [app.id])
            app.activity.recordStored(key: key, claims: claims, objects: objects, duplicates: duplicates, rejections: allRejections,
                                      createdAtMillis: segment.header.createdAtMillis, writeSeconds: seconds)
            let accepted = objects.count - duplicateCount
            metrics.objects.increment([app.id, "accepted"], by: Double(accepted))
            metrics.objects.increment([app.id, "duplicate"], by: Double(duplicateCount))
            metrics.objects.increment([app.id, "rejected"], by: Double(allRejections.count))
            return .json(body)
        }
    }

    /// Why `document` cannot go into `collection`, or nil if it can.
    static func check(_ document: BSONDocument, collection: String, schema: Schema,
                      app: IngestApp) -> (code: String, reason: String)? {
        guard let object = schema[collection] else {
            let hint = app.configuration.developmentMode
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

    private func sinkCall<T>(_ app: IngestApp, _ body: () throws(SinkError) -> T) throws(UploadError) -> T {
        do {
            return try body()
        } catch {
            if error.isTransient {
                throw UploadError(.serviceUnavailable, code: "sink_unavailable",
                                  "the app's database is busy or full (\(error.message)); retry after the Retry-After delay",
                                  retryAfterSeconds: configuration.retryAfterSeconds)
            }
            throw UploadError(.internalServerError, code: "sink_error",
                              "the app's database failed: \(error.message); retry later")
        }
    }
}

extension UploadHandler {
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
