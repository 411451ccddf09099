/// A message from the server to a Realm sync client. Every header line
/// ends with a newline, even without a body (the client requires it), and
/// goes in a binary frame (the client ignores text frames).
///
/// ```swift
/// let ack = ServerMessage.download(DownloadMessage(
///     session: 1, downloadServerVersion: 6, downloadClientVersion: 12, latestServerVersion: 6,
///     latestServerVersionSalt: 777, uploadClientVersion: 12, uploadServerVersion: 0))
/// socket.send(WebSocketFrameEncoder.frame(.binary, payload: ack.encoded()))
/// // "download 1 6 12 6 777 12 0 0 2 1 0 0 0\n"
/// ```
public enum ServerMessage: Sendable, Hashable {
    /// A new client file identifier.
    case ident(ServerIdentMessage)
    /// The echo of a client's mark.
    case mark(MarkMessage)
    /// Changesets, or the acknowledgement of uploads.
    case download(DownloadMessage)
    /// The answer to a ping (`pong <timestamp>`).
    case pong(timestamp: Int64)
    /// The answer to an unbind (`unbound <session>`).
    case unbound(session: UInt64)
    /// A plain-text error.
    case error(ErrorMessage)
    /// An error with a JSON body.
    case jsonError(JSONErrorMessage)
    /// A line for the client's log.
    case logMessage(LogMessage)
    /// A subscription set the server cannot serve.
    case queryError(QueryErrorMessage)

    /// The message type as on the wire.
    public var type: String {
        switch self {
        case .ident: return "ident"
        case .mark: return "mark"
        case .download: return "download"
        case .pong: return "pong"
        case .unbound: return "unbound"
        case .error: return "error"
        case .jsonError: return "json_error"
        case .logMessage: return "log_message"
        case .queryError: return "query_error"
        }
    }

    /// The message as sent on the wire.
    public func encoded() -> [UInt8] {
        switch self {
        case .ident(let ident):
            var out = SyncHeaderWriter("ident")
            out.field(ident.session)
            out.field(ident.fileIdent)
            out.field(ident.fileIdentSalt)
            return out.finish()
        case .mark(let mark):
            return mark.encoded()
        case .download(let download):
            var out = SyncHeaderWriter("download")
            out.field(download.session)
            out.field(download.downloadServerVersion)
            out.field(download.downloadClientVersion)
            out.field(download.latestServerVersion)
            out.field(download.latestServerVersionSalt)
            out.field(download.uploadClientVersion)
            out.field(download.uploadServerVersion)
            out.field(download.queryVersion)
            out.field(download.batchState.rawValue)
            out.field(text: download.progressText)
            out.field(download.isCompressed)
            out.field(download.uncompressedSize)
            out.field(download.compressedSize)
            return out.finish(body: download.body)
        case .pong(let timestamp):
            var out = SyncHeaderWriter("pong")
            out.field(timestamp)
            return out.finish()
        case .unbound(let session):
            var out = SyncHeaderWriter("unbound")
            out.field(session)
            return out.finish()
        case .error(let error):
            var out = SyncHeaderWriter("error")
            out.field(error.code.rawValue)
            out.field(error.message.utf8.count)
            out.field(error.tryAgain)
            out.field(error.session)
            return out.finish(body: Array(error.message.utf8))
        case .jsonError(let error):
            return error.encoded()
        case .logMessage(let log):
            var out = SyncHeaderWriter("log_message")
            out.field(log.session)
            out.field(log.bodyText.utf8.count)
            return out.finish(body: Array(log.bodyText.utf8))
        case .queryError(let error):
            var out = SyncHeaderWriter("query_error")
            out.field(error.code.rawValue)
            out.field(error.message.utf8.count)
            out.field(error.session)
            out.field(error.queryVersion)
            return out.finish(body: Array(error.message.utf8))
        }
    }

    /// Parses a server message (as a client or a test reads it).
    /// - Throws: ``SyncMessageError``.
    public init(parsing message: [UInt8], limits: SyncMessageLimits = SyncMessageLimits()) throws(SyncMessageError) {
        var header = try SyncHeaderReader(message, limits: limits)
        switch header.type {
        case "ident":
            let ident = ServerIdentMessage(
                session: try header.unsigned("session"), fileIdent: try header.unsigned("file-ident"),
                fileIdentSalt: try header.signed("salt"))
            try header.end()
            _ = try header.body(count: 0)
            self = .ident(ident)
        case "mark":
            self = .mark(try MarkMessage(header: &header))
        case "download":
            let session = try header.unsigned("session")
            let downloadServerVersion = try header.unsigned("download-server-version")
            let downloadClientVersion = try header.unsigned("download-client-version")
            let latestServerVersion = try header.unsigned("latest-server-version")
            let latestSalt = try header.signed("latest-server-salt")
            let uploadClientVersion = try header.unsigned("upload-client-version")
            let uploadServerVersion = try header.unsigned("upload-server-version")
            let queryVersion = try header.signed("query-version")
            let stateValue = try header.int32("batch-state")
            guard let batchState = DownloadBatchState(rawValue: stateValue) else {
                throw SyncMessageError(.badSyntax, offset: 0, message: "batch-state \(stateValue) is not 0, 1 or 2")
            }
            let progress = try header.double("progress")
            guard (0...1).contains(progress) else {
                throw SyncMessageError(.badSyntax, offset: 0, message: "progress \(progress) is outside 0...1")
            }
            guard queryVersion >= 0 else { throw SyncMessageError(.badSyntax, offset: 0, message: "a negative query-version") }
            let isCompressed = try header.bool("is-compressed")
            let uncompressedSize = try header.size("uncompressed-size", limit: limits.maxBodyBytes)
            let compressedSize = try header.size("compressed-size", limit: limits.maxBodyBytes)
            try header.end()
            let body = try header.body(count: isCompressed ? compressedSize : uncompressedSize)
            self = .download(
                DownloadMessage(
                    session: session, downloadServerVersion: downloadServerVersion, downloadClientVersion: downloadClientVersion,
                    latestServerVersion: latestServerVersion, latestServerVersionSalt: latestSalt,
                    uploadClientVersion: uploadClientVersion, uploadServerVersion: uploadServerVersion, queryVersion: queryVersion,
                    batchState: batchState, progress: progress, isCompressed: isCompressed, uncompressedSize: uncompressedSize,
                    compressedSize: compressedSize, body: body))
        case "pong":
            let timestamp = try header.signed("timestamp")
            try header.end()
            _ = try header.body(count: 0)
            self = .pong(timestamp: timestamp)
        case "unbound":
            let session = try header.unsigned("session")
            try header.end()
            _ = try header.body(count: 0)
            self = .unbound(session: session)
        case "error":
            let code = SyncErrorCode(rawValue: try header.int32("error-code"))
            let size = try header.size("message-size", limit: limits.maxTextBytes)
            let tryAgain = try header.bool("try-again")
            let session = try header.unsigned("session")
            try header.end()
            self = .error(
                ErrorMessage(code: code, message: try header.text(count: size, "error message"), tryAgain: tryAgain, session: session))
        case "json_error":
            self = .jsonError(try JSONErrorMessage(header: &header, limits: limits))
        case "log_message":
            let session = try header.unsigned("session")
            let size = try header.size("json-size", limit: limits.maxTextBytes)
            try header.end()
            self = .logMessage(LogMessage(session: session, bodyText: try header.text(count: size, "log_message body")))
        case "query_error":
            let code = SyncErrorCode(rawValue: try header.int32("error-code"))
            let size = try header.size("message-size", limit: limits.maxTextBytes)
            let session = try header.unsigned("session")
            let queryVersion = try header.signed("query-version")
            try header.end()
            self = .queryError(
                QueryErrorMessage(
                    code: code, message: try header.text(count: size, "query_error message"),
                    session: session, queryVersion: queryVersion))
        default:
            throw SyncMessageError(.unknownMessage, offset: 0, message: "unknown message type '\(header.type.prefix(32))'")
        }
    }
}
