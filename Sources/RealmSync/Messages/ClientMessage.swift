/// A message from a Realm sync client to the server: one binary WebSocket
/// message, a header line of space-separated fields, a newline, then a body
/// whose size the header gives.
///
/// Parsing is strict and bounded: sizes are checked against
/// ``SyncMessageLimits`` before any body is read, the body must be exactly the
/// declared size, and an upload body is inflated only on request
/// (``UploadMessage/changesets(limits:)``).
///
/// ```swift
/// switch try ClientMessage(parsing: bytes) {
/// case .mark(let mark): send(ServerMessage.mark(mark).encoded())
/// case .ping(let ping): send(ServerMessage.pong(timestamp: ping.timestamp).encoded())
/// default: break
/// }
/// ```
public enum ClientMessage: Sendable, Hashable {
    /// Opens a session.
    case bind(BindMessage)
    /// Names the client file and its download cursor.
    case ident(ClientIdentMessage)
    /// A new subscription set.
    case query(QueryMessage)
    /// Asks to be told when the server has caught up.
    case mark(MarkMessage)
    /// Changesets.
    case upload(UploadMessage)
    /// A heartbeat.
    case ping(PingMessage)
    /// Closes a session (`unbind <session>`), answered by `unbound`.
    case unbind(session: UInt64)
    /// An error the client reports.
    case jsonError(JSONErrorMessage)

    /// The message type as on the wire (`bind`, `upload`, ...).
    public var type: String {
        switch self {
        case .bind: return "bind"
        case .ident: return "ident"
        case .query: return "query"
        case .mark: return "mark"
        case .upload: return "upload"
        case .ping: return "ping"
        case .unbind: return "unbind"
        case .jsonError: return "json_error"
        }
    }

    /// Parses one message.
    /// - Throws: ``SyncMessageError``; send its ``SyncMessageError/syncCode``
    ///   to the client and close the connection.
    public init(parsing message: [UInt8], limits: SyncMessageLimits = SyncMessageLimits()) throws(SyncMessageError) {
        var header = try SyncHeaderReader(message, limits: limits)
        switch header.type {
        case "bind":
            let session = try header.unsigned("session")
            let dataSize = try header.size("data-size", limit: limits.maxBindDataBytes)
            let tokenSize = try header.size("token-size", limit: limits.maxTokenBytes)
            let needsFileIdent = try header.bool("need-file-ident")
            let isSubserver = try header.bool("is-subserver")
            try header.end()
            let body = try header.body(count: dataSize + tokenSize)
            let data = try SyncHeaderReader.utf8(body[..<dataSize], at: header.bodyStart, "bind data")
            let token = try SyncHeaderReader.utf8(body[dataSize...], at: header.bodyStart + dataSize, "bind token")
            self = .bind(
                BindMessage(
                    session: session, data: data, token: token, needsFileIdent: needsFileIdent,
                    isSubserver: isSubserver))
        case "ident":
            let session = try header.unsigned("session")
            var ident = ClientIdentMessage(
                session: session, fileIdent: try header.unsigned("file-ident"), fileIdentSalt: try header.signed("salt"),
                scanServerVersion: try header.unsigned("scan-server-version"),
                scanClientVersion: try header.unsigned("scan-client-version"),
                latestServerVersion: try header.unsigned("latest-server-version"),
                latestServerVersionSalt: try header.signed("latest-server-salt"), query: nil)
            if header.argumentCount == 7 {
                try header.end()
                _ = try header.body(count: 0)
            } else {
                let version = try header.signed("query-version")
                let size = try header.size("query-size", limit: limits.maxQueryBytes)
                try header.end()
                ident.query = SyncQuery(version: version, body: try header.text(count: size, "query body"))
            }
            self = .ident(ident)
        case "query":
            let session = try header.unsigned("session")
            let version = try header.signed("query-version")
            let size = try header.size("query-size", limit: limits.maxQueryBytes)
            try header.end()
            self = .query(
                QueryMessage(session: session, query: SyncQuery(version: version, body: try header.text(count: size, "query body"))))
        case "mark":
            self = .mark(try MarkMessage(header: &header))
        case "upload":
            let session = try header.unsigned("session")
            let isCompressed = try header.bool("is-compressed")
            let uncompressedSize = try header.size("uncompressed-size", limit: limits.maxBodyBytes)
            let compressedSize = try header.size("compressed-size", limit: limits.maxBodyBytes)
            let progressClientVersion = try header.unsigned("progress-client-version")
            let progressServerVersion = try header.unsigned("progress-server-version")
            let lockedServerVersion = try header.unsigned("locked-server-version")
            try header.end()
            if !isCompressed && compressedSize != 0 {
                throw SyncMessageError(.badSyntax, offset: 0, message: "an uncompressed upload must have compressed-size 0")
            }
            let body = try header.body(count: isCompressed ? compressedSize : uncompressedSize)
            self = .upload(
                UploadMessage(
                    session: session, isCompressed: isCompressed, uncompressedSize: uncompressedSize,
                    compressedSize: compressedSize, progressClientVersion: progressClientVersion,
                    progressServerVersion: progressServerVersion, lockedServerVersion: lockedServerVersion, body: body))
        case "ping":
            let ping = PingMessage(timestamp: try header.signed("timestamp"), roundTripTime: try header.signed("rtt"))
            try header.end()
            _ = try header.body(count: 0)
            self = .ping(ping)
        case "unbind":
            let session = try header.unsigned("session")
            try header.end()
            _ = try header.body(count: 0)
            self = .unbind(session: session)
        case "json_error":
            self = .jsonError(try JSONErrorMessage(header: &header, limits: limits))
        default:
            throw SyncMessageError(.unknownMessage, offset: 0, message: "unknown message type '\(header.type.prefix(32))'")
        }
    }

    /// The message as sent on the wire.
    public func encoded() -> [UInt8] {
        switch self {
        case .bind(let bind):
            var out = SyncHeaderWriter("bind")
            out.field(bind.session)
            out.field(bind.data.utf8.count)
            out.field(bind.token.utf8.count)
            out.field(bind.needsFileIdent)
            out.field(bind.isSubserver)
            return out.finish(body: Array(bind.data.utf8) + Array(bind.token.utf8))
        case .ident(let ident):
            var out = SyncHeaderWriter("ident")
            out.field(ident.session)
            out.field(ident.fileIdent)
            out.field(ident.fileIdentSalt)
            out.field(ident.scanServerVersion)
            out.field(ident.scanClientVersion)
            out.field(ident.latestServerVersion)
            out.field(ident.latestServerVersionSalt)
            guard let query = ident.query else { return out.finish() }
            out.field(query.version)
            out.field(query.body.utf8.count)
            return out.finish(body: Array(query.body.utf8))
        case .query(let query):
            var out = SyncHeaderWriter("query")
            out.field(query.session)
            out.field(query.query.version)
            out.field(query.query.body.utf8.count)
            return out.finish(body: Array(query.query.body.utf8))
        case .mark(let mark):
            return mark.encoded()
        case .upload(let upload):
            var out = SyncHeaderWriter("upload")
            out.field(upload.session)
            out.field(upload.isCompressed)
            out.field(upload.uncompressedSize)
            out.field(upload.compressedSize)
            out.field(upload.progressClientVersion)
            out.field(upload.progressServerVersion)
            out.field(upload.lockedServerVersion)
            return out.finish(body: upload.body)
        case .ping(let ping):
            var out = SyncHeaderWriter("ping")
            out.field(ping.timestamp)
            out.field(ping.roundTripTime)
            return out.finish()
        case .unbind(let session):
            var out = SyncHeaderWriter("unbind")
            out.field(session)
            return out.finish()
        case .jsonError(let error):
            return error.encoded()
        }
    }
}
