import Foundation
import IngestCore
import IngestSupport
import Logging
import RealmSync

/// One Realm client connection's sync protocol state: its bound sessions,
/// each with its client file and cursors. ``receive(_:)`` takes one binary
/// WebSocket message and returns the messages to send back, in order, and
/// whether to close the connection after them. Used by one thread (the
/// connection's).
///
/// The exchange (Docs/RealmCompatibility.md): `bind` (answered by `ident`
/// with a new file identifier when asked), `ident` (the file must be one
/// this server allocated for the app, with its salt), `query` (an
/// asymmetric-only app has an empty subscription set: answered by an empty
/// download that completes it), `mark` (echoed), `upload` (each changeset
/// written through the upload service with its own receipt, then one
/// `download` acknowledging the last changeset's client version, sent only
/// after the sink committed), `ping` (`pong`), `unbind` (`unbound`).
///
/// ```swift
/// let connection = service.connection(appId: appId, claims: claims)
/// let reply = connection.receive(Array("mark 1 1\n".utf8))
/// reply.messages   // [.mark(MarkMessage(session: 1, requestIdent: 1))]
/// ```
package final class RealmSyncConnection {
    /// What to send after one client message.
    package struct Reply {
        /// The messages to send, in order.
        package var messages: [ServerMessage] = []
        /// Close the connection after sending them (a connection-level error).
        package var close = false
    }

    struct Session {
        var fileIdent: UInt64?
        var salt: Int64 = 0
        /// The server version the client has (its download cursor), raised
        /// by each acknowledgement; versions never go backwards.
        var serverVersion: UInt64 = 0
        /// The last client version acknowledged.
        var acknowledgedClientVersion: UInt64 = 0
        var queryVersion: Int64 = 0
        var ingestor: ChangesetIngestor
        /// Stopped by a session error: later uploads are ignored until unbind.
        var failed = false
    }

    let service: RealmSyncService
    let appId: String
    let claims: AccessClaims
    let protocolVersion: Int
    private var sessions: [UInt64: Session] = [:]

    /// Realm's epoch, 2015-01-01T00:00:00Z, in milliseconds since 1970.
    static let realmEpochMillis: Int64 = 1_420_070_400_000

    init(service: RealmSyncService, appId: String, claims: AccessClaims, protocolVersion: Int) {
        self.service = service
        self.appId = appId
        self.claims = claims
        self.protocolVersion = protocolVersion
    }

    /// Bound sessions.
    package var sessionCount: Int { sessions.count }

    /// Handles one client message.
    package func receive(_ bytes: [UInt8]) -> Reply {
        let message: ClientMessage
        do {
            message = try ClientMessage(parsing: bytes, limits: service.configuration.messageLimits)
        } catch {
            return connectionError(error.syncCode, "the message cannot be read: \(error.message)")
        }
        switch message {
        case .bind(let bind): return self.bind(bind)
        case .ident(let ident): return self.ident(ident)
        case .query(let query): return self.query(query)
        case .mark(let mark):
            guard sessions[mark.session] != nil else { return unbound(mark.session, "mark") }
            return Reply(messages: [.mark(mark)])
        case .upload(let upload): return self.upload(upload)
        case .ping(let ping): return Reply(messages: [.pong(timestamp: ping.timestamp)])
        case .unbind(let session):
            sessions[session] = nil
            return Reply(messages: [.unbound(session: session)])
        case .jsonError(let error):
            service.logger.notice(
                "realm client of app \(appId) reported error \(error.code): \(error.bodyText.prefix(500))",
                metadata: ["app": "\(appId)"])
            return Reply()
        }
    }

    // MARK: - Messages

    private func bind(_ bind: BindMessage) -> Reply {
        guard sessions[bind.session] == nil else {
            return connectionError(.reuseOfSessionIdent, "session \(bind.session) is already bound on this connection")
        }
        guard sessions.count < service.configuration.maxSessionsPerConnection else {
            return sessionError(
                bind.session, .tooManySessions,
                "at most \(service.configuration.maxSessionsPerConnection) sessions per connection", action: .applicationBug)
        }
        guard !bind.isSubserver else {
            return sessionError(bind.session, .unsupportedSessionFeature, "subservers are not supported", action: .applicationBug)
        }
        guard let app = service.uploads.apps[appId] else {
            return connectionError(.otherError, "no app with id \"\(appId)\" is configured on this server")
        }
        let now = Int64(Date().timeIntervalSince1970)
        if now > claims.expiresAt {
            // The token of the upgrade expired while the connection stayed open
            // (the upgrade allowed its clock-skew leeway; a new session does not).
            return sessionError(
                bind.session, .tokenExpired, "the access token expired; refresh it and reconnect",
                tryAgain: true, action: .refreshUser)
        }
        var session = Session(
            ingestor: ChangesetIngestor(
                schema: app.schema, schemaMode: app.configuration.developmentMode ? .development : .fixed))
        var reply = Reply()
        if bind.needsFileIdent {
            do {
                let file = try service.auth.store.allocateRealmClientFile(appId: appId, userId: claims.userId, now: now)
                reply.messages.append(
                    .ident(
                        ServerIdentMessage(
                            session: bind.session, fileIdent: file.fileIdent,
                            fileIdentSalt: file.salt)))
            } catch {
                service.logger.error(
                    "realm sync: cannot allocate a client file for app \(appId): \(error.message)",
                    metadata: ["app": "\(appId)"])
                return sessionError(
                    bind.session, .otherSessionError, "the server cannot allocate a client file now; retry later",
                    tryAgain: true, action: .transient)
            }
        }
        sessions[bind.session] = session
        return reply
    }

    private func ident(_ ident: ClientIdentMessage) -> Reply {
        guard var session = sessions[ident.session] else { return unbound(ident.session, "ident") }
        guard session.fileIdent == nil else {
            return connectionError(.badMessageOrder, "a second ident in session \(ident.session)")
        }
        let file: RealmClientFileRecord?
        do {
            file = try service.auth.store.realmClientFile(ident.fileIdent)
        } catch {
            return sessionError(
                ident.session, .otherSessionError, "the server cannot read its client files now; retry later",
                tryAgain: true, action: .transient)
        }
        guard let file, file.appId == appId, file.salt == ident.fileIdentSalt else {
            return sessionError(
                ident.session, .badClientFileIdent,
                "client file \(ident.fileIdent) is not one this server issued for app \(appId) "
                    + "(was the server's state directory replaced?); delete the local realm file to start over",
                action: .applicationBug)
        }
        session.fileIdent = file.fileIdent
        session.salt = file.salt
        session.serverVersion = max(ident.scanServerVersion, ident.latestServerVersion)
        session.acknowledgedClientVersion = ident.scanClientVersion
        var reply = Reply()
        if let query = ident.query {
            session.queryVersion = query.version
            if let refusal = refusal(of: query, session: ident.session) {
                sessions[ident.session] = session
                return Reply(messages: [refusal])
            }
            if query.version > 0 { reply.messages.append(.download(emptyDownload(session, ident.session, complete: true))) }
        }
        sessions[ident.session] = session
        return reply
    }

    private func query(_ query: QueryMessage) -> Reply {
        guard var session = sessions[query.session] else { return unbound(query.session, "query") }
        guard session.fileIdent != nil else {
            return connectionError(.badMessageOrder, "a query before the ident in session \(query.session)")
        }
        session.queryVersion = query.query.version
        sessions[query.session] = session
        if let refusal = refusal(of: query.query, session: query.session) { return Reply(messages: [refusal]) }
        return Reply(messages: [.download(emptyDownload(session, query.session, complete: true))])
    }

    private func upload(_ upload: UploadMessage) -> Reply {
        guard var session = sessions[upload.session] else { return unbound(upload.session, "upload") }
        guard let fileIdent = session.fileIdent else {
            return connectionError(.badMessageOrder, "an upload before the ident in session \(upload.session)")
        }
        if session.failed { return Reply() }
        let changesets: [UploadChangeset]
        do {
            changesets = try upload.changesets(limits: service.configuration.messageLimits)
        } catch {
            return connectionError(error.syncCode, "the upload cannot be read: \(error.message)")
        }
        var reply = Reply()
        var last: UploadChangeset?
        for changeset in changesets {
            switch ingest(changeset, fileIdent: fileIdent, session: &session, sessionIdent: upload.session) {
            case .stored(let rejections):
                if !rejections.isEmpty {
                    reply.messages.append(
                        compensatingWrite(
                            rejections, changeset: changeset, session: session,
                            sessionIdent: upload.session))
                }
                last = changeset
            case .failed(let error):
                session.failed = true
                if let last { reply.messages.append(.download(acknowledge(last, session: &session, sessionIdent: upload.session))) }
                reply.messages.append(error)
                sessions[upload.session] = session
                return reply
            }
        }
        if let last { reply.messages.append(.download(acknowledge(last, session: &session, sessionIdent: upload.session))) }
        // The compensating-write errors name the server version of the acknowledgement that follows them.
        reply.messages = reply.messages.map { message in
            guard case .jsonError(var error) = message, error.code == .compensatingWrite,
                var body = try? error.body()
            else { return message }
            body.compensatingWriteServerVersion = session.serverVersion
            error = JSONErrorMessage(code: error.code, session: error.session, body: body)
            return .jsonError(error)
        }
        sessions[upload.session] = session
        return reply
    }

    // MARK: - Ingest

    enum ChangesetOutcome {
        /// Committed (or received before); the objects rejected, with their reasons.
        case stored([JSONErrorBody.RejectedUpdate])
        /// A session error to send; nothing of the changeset was written.
        case failed(ServerMessage)
    }

    private func ingest(
        _ changeset: UploadChangeset, fileIdent: UInt64, session: inout Session,
        sessionIdent: UInt64
    ) -> ChangesetOutcome {
        let result: ChangesetIngestResult
        do {
            result = try session.ingestor.ingest(changeset.data)
        } catch {
            let action: SyncErrorAction = error.code == .notAsymmetric ? .applicationBug : .protocolViolation
            service.logger.notice(
                "realm sync: app \(appId) client file \(fileIdent) version \(changeset.clientVersion): \(error.message)",
                metadata: ["app": "\(appId)"])
            return .failed(sessionErrorMessage(sessionIdent, error.syncCode, error.message, action: action))
        }
        if result.schemaChanged, session.ingestor.schemaMode == .development, let app = service.uploads.apps[appId] {
            // The client's schema changeset is acknowledged on its own and never
            // sent again: the app learns it now, for later sessions and instances.
            do {
                _ = try app.learnDeclared(session.ingestor.schema, logger: service.logger)
            } catch {
                return .failed(
                    sessionErrorMessage(
                        sessionIdent, .otherSessionError, "the server cannot store the schema now (\(error.message)); retry later",
                        tryAgain: true, action: .transient))
            }
        }
        // A changeset with no objects (the schema) writes nothing.
        guard !result.objects.isEmpty || !result.rejected.isEmpty else { return .stored([]) }
        let key = SegmentKey.realm(fileIdent: fileIdent, clientVersion: changeset.clientVersion)
        let objects = result.objects.map { (collection: $0.className, bson: $0.bson) }
        let rejected = result.rejected.map { (collection: $0.className, id: $0.primaryKey.displayText, reason: $0.reason) }
        let all = result.objects.map(\.primaryKey) + result.rejected.map(\.primaryKey)
        let clientSchema = session.ingestor.schemaMode == .development ? session.ingestor.schema : nil
        let createdAt = Int64(clamping: changeset.originTimestamp).saturatingAdd(Self.realmEpochMillis)
        do {
            let stored = try writeWaitingWhileBusy { () throws(UploadError) in
                try service.uploads.ingestRealmChangeset(
                    appId: appId, claims: claims, key: key, objects: objects, rejected: rejected,
                    clientSchema: clientSchema, createdAtMillis: createdAt)
            }
            let answer = try stored.answer()
            let rejections = answer.rejectedObjects.compactMap { rejected -> JSONErrorBody.RejectedUpdate? in
                guard rejected.index >= 0 && rejected.index < all.count else { return nil }
                return JSONErrorBody.RejectedUpdate(
                    table: rejected.collection, primaryKey: all[rejected.index],
                    reason: "\(rejected.errorCode): \(rejected.reason)")
            }
            return .stored(rejections)
        } catch let error as UploadError {
            return .failed(uploadFailure(error, sessionIdent: sessionIdent))
        } catch {
            // The receipt's answer does not decode: the sink is broken.
            return .failed(
                sessionErrorMessage(
                    sessionIdent, .otherSessionError, "the server cannot read its receipt (\(error)); retry later",
                    tryAgain: true, action: .transient))
        }
    }

    /// Runs `write`; while the server is busy (more uploads in flight than
    /// allowed) waits a little and retries, bounded (2 s), rather than send
    /// the client away.
    private func writeWaitingWhileBusy(_ write: () throws(UploadError) -> UploadResult) throws(UploadError) -> UploadResult {
        var attempts = 0
        while true {
            do {
                return try write()
            } catch {
                guard error.kind == .overloaded, attempts < 100 else { throw error }
                attempts += 1
                usleep(20_000)
            }
        }
    }

    private func uploadFailure(_ error: UploadError, sessionIdent: UInt64) -> ServerMessage {
        switch error.kind {
        case .overloaded, .unavailable, .failed:
            var body = JSONErrorBody(message: "\(error.message) (\(error.code))", tryAgain: true, action: .transient)
            let delay = max(1, error.retryAfterSeconds ?? 1)
            body.backoff = .init(intervalSeconds: delay, maxDelaySeconds: 300, multiplier: 2)
            return .jsonError(JSONErrorMessage(code: .otherSessionError, session: sessionIdent, body: body))
        case .unauthenticated:
            return sessionErrorMessage(sessionIdent, .tokenExpired, error.message, tryAgain: true, action: .refreshUser)
        case .forbidden:
            return sessionErrorMessage(sessionIdent, .permissionDenied, error.message, action: .applicationBug)
        default:
            return sessionErrorMessage(sessionIdent, .badChangeset, "\(error.message) (\(error.code))", action: .applicationBug)
        }
    }

    /// The acknowledgement of everything up to `changeset`: the download
    /// cursor's client version reaches it (the client then discards its
    /// copy) and the server version moves forward with it.
    private func acknowledge(_ changeset: UploadChangeset, session: inout Session, sessionIdent: UInt64) -> DownloadMessage {
        session.serverVersion = max(session.serverVersion, changeset.clientVersion)
        session.acknowledgedClientVersion = max(session.acknowledgedClientVersion, changeset.clientVersion)
        return DownloadMessage(
            session: sessionIdent, downloadServerVersion: session.serverVersion,
            downloadClientVersion: session.acknowledgedClientVersion, latestServerVersion: session.serverVersion,
            latestServerVersionSalt: session.salt, uploadClientVersion: session.acknowledgedClientVersion,
            uploadServerVersion: min(changeset.lastIntegratedServerVersion, session.serverVersion),
            queryVersion: session.queryVersion)
    }

    private func emptyDownload(_ session: Session, _ sessionIdent: UInt64, complete: Bool) -> DownloadMessage {
        DownloadMessage(
            session: sessionIdent, downloadServerVersion: session.serverVersion,
            downloadClientVersion: session.acknowledgedClientVersion, latestServerVersion: session.serverVersion,
            latestServerVersionSalt: session.salt, uploadClientVersion: session.acknowledgedClientVersion,
            uploadServerVersion: 0, queryVersion: session.queryVersion,
            batchState: complete ? .lastInBatch : .steadyState)
    }

    private func compensatingWrite(
        _ rejections: [JSONErrorBody.RejectedUpdate], changeset: UploadChangeset,
        session: Session, sessionIdent: UInt64
    ) -> ServerMessage {
        let names = rejections.prefix(3).map { "\($0.table) \($0.primaryKey.displayText): \($0.reason)" }.joined(separator: "; ")
        var body = JSONErrorBody(
            message: "\(rejections.count) object(s) of client version \(changeset.clientVersion) were rejected and not stored: \(names)",
            tryAgain: false, action: .warning)
        body.rejectedUpdates = rejections
        body.rejectedClientVersion = changeset.clientVersion
        body.compensatingWriteServerVersion = session.serverVersion
        return .jsonError(JSONErrorMessage(code: .compensatingWrite, session: sessionIdent, body: body))
    }

    /// The query error for a subscription set this server cannot serve
    /// (any subscription: the server holds no data to download), or nil for
    /// an empty one.
    private func refusal(of query: SyncQuery, session: UInt64) -> ServerMessage? {
        let text = query.body.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty || text == "{}" { return nil }
        if case .object(let members)? = try? JSONValue(parsing: text, maxDepth: 16), members.isEmpty { return nil }
        return .queryError(
            QueryErrorMessage(
                code: .badQuery,
                message: "this server accepts asymmetric data only: subscriptions (\(text.prefix(200))) cannot be served; "
                    + "remove them, or use AsymmetricObject types only",
                session: session, queryVersion: query.version))
    }

    // MARK: - Errors

    private func unbound(_ session: UInt64, _ type: String) -> Reply {
        connectionError(.badSessionIdent, "\(type) for session \(session), which is not bound")
    }

    private func connectionError(_ code: SyncErrorCode, _ message: String) -> Reply {
        service.logger.notice("realm sync: app \(appId): closing the connection: \(message)", metadata: ["app": "\(appId)"])
        let body = JSONErrorBody(message: message, tryAgain: false, action: .protocolViolation)
        return Reply(messages: [.jsonError(JSONErrorMessage(code: code, session: 0, body: body))], close: true)
    }

    private func sessionError(
        _ session: UInt64, _ code: SyncErrorCode, _ message: String, tryAgain: Bool = false,
        action: SyncErrorAction
    ) -> Reply {
        Reply(messages: [sessionErrorMessage(session, code, message, tryAgain: tryAgain, action: action)])
    }

    private func sessionErrorMessage(
        _ session: UInt64, _ code: SyncErrorCode, _ message: String, tryAgain: Bool = false,
        action: SyncErrorAction
    ) -> ServerMessage {
        .jsonError(
            JSONErrorMessage(
                code: code, session: session,
                body: JSONErrorBody(message: message, tryAgain: tryAgain, action: action)))
    }
}

extension PrimaryKey {
    /// The key as people read it (an ObjectId's hex, a UUID, a number).
    var displayText: String {
        switch self {
        case .null: "null"
        case .int(let value): String(value)
        case .string(let value): value
        case .globalKey(let high, let low): "\(high):\(low)"
        case .objectId(let id): id.hex
        case .uuid(let uuid): uuid.uuidString.lowercased()
        }
    }
}
