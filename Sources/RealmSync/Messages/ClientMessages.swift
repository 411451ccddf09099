import IngestCore
import IngestSupport

/// `bind <session> <data-size> <token-size> <need-file-ident> <is-subserver>`
/// then the data and the token: the client opens a session. Flexible Sync
/// clients send JSON data (`{"schemaVersion":1,"sessionReason":0}`) and an
/// empty token (the token came with the WebSocket upgrade).
public struct BindMessage: Sendable, Hashable {
    /// The session identifier the client chose (unique per connection while bound).
    public var session: UInt64
    /// The JSON data (Flexible Sync) or realm path (partition sync).
    public var data: String
    /// A signed user token; empty for Flexible Sync.
    public var token: String
    /// Whether the client asks for a client file identifier (answered by `ident`).
    public var needsFileIdent: Bool
    /// Whether the client is a subserver (always false for apps).
    public var isSubserver: Bool

    /// A bind message with the given fields.
    public init(session: UInt64, data: String, token: String = "", needsFileIdent: Bool, isSubserver: Bool = false) {
        self.session = session
        self.data = data
        self.token = token
        self.needsFileIdent = needsFileIdent
        self.isSubserver = isSubserver
    }

    /// The data as JSON (`schemaVersion`, `sessionReason`), or nil when it is not JSON.
    public var json: JSONValue? { try? JSONValue(parsing: data, maxDepth: 16) }
}

/// `ident <session> <file-ident> <salt> <scan-server-version>
/// <scan-client-version> <latest-server-version> <latest-server-salt>`,
/// with `<query-version> <query-size>` and the query body in Flexible Sync:
/// the client names its file and where its download cursor stands.
public struct ClientIdentMessage: Sendable, Hashable {
    /// The session.
    public var session: UInt64
    /// The client file identifier (from the server's `ident` earlier).
    public var fileIdent: UInt64
    /// Its salt.
    public var fileIdentSalt: Int64
    /// The download cursor: the server version the client has integrated.
    public var scanServerVersion: UInt64
    /// The download cursor: the client version that server version integrated.
    public var scanClientVersion: UInt64
    /// The latest server version the client knows of.
    public var latestServerVersion: UInt64
    /// Its salt.
    public var latestServerVersionSalt: Int64
    /// Flexible Sync's query version and body (the subscription set as JSON);
    /// nil in the partition-sync form.
    public var query: SyncQuery?

    /// An ident message with the given fields.
    public init(
        session: UInt64, fileIdent: UInt64, fileIdentSalt: Int64, scanServerVersion: UInt64 = 0,
        scanClientVersion: UInt64 = 0, latestServerVersion: UInt64 = 0, latestServerVersionSalt: Int64 = 0,
        query: SyncQuery? = SyncQuery(version: 0, body: "{}")
    ) {
        self.session = session
        self.fileIdent = fileIdent
        self.fileIdentSalt = fileIdentSalt
        self.scanServerVersion = scanServerVersion
        self.scanClientVersion = scanClientVersion
        self.latestServerVersion = latestServerVersion
        self.latestServerVersionSalt = latestServerVersionSalt
        self.query = query
    }
}

/// A Flexible Sync subscription set: its version and its JSON body (an
/// object from class name to query; `{}` for an app with asymmetric
/// classes only).
public struct SyncQuery: Sendable, Hashable {
    /// The query version (0 before any subscription).
    public var version: Int64
    /// The JSON text.
    public var body: String

    /// A query with the given version and body.
    public init(version: Int64, body: String) {
        self.version = version
        self.body = body
    }
}

/// `query <session> <query-version> <query-size>` then the body: a new
/// subscription set.
public struct QueryMessage: Sendable, Hashable {
    /// The session.
    public var session: UInt64
    /// The subscription set.
    public var query: SyncQuery

    /// A query message.
    public init(session: UInt64, query: SyncQuery) {
        self.session = session
        self.query = query
    }
}

/// `mark <session> <request-ident>`, in both directions: the client asks to
/// be told when the server has caught up; the server echoes it. The client
/// sends no upload before the echo.
public struct MarkMessage: Sendable, Hashable {
    /// The session.
    public var session: UInt64
    /// The request identifier, echoed unchanged.
    public var requestIdent: UInt64

    /// A mark message.
    public init(session: UInt64, requestIdent: UInt64) {
        self.session = session
        self.requestIdent = requestIdent
    }
}

/// `upload <session> <is-compressed> <uncompressed-size> <compressed-size>
/// <progress-client-version> <progress-server-version> <locked-server-version>`
/// then the body (zlib, RFC 1950, when compressed): changesets for the server.
public struct UploadMessage: Sendable, Hashable {
    /// The session.
    public var session: UInt64
    /// Whether ``body`` is zlib-compressed.
    public var isCompressed: Bool
    /// The body's size uncompressed.
    public var uncompressedSize: Int
    /// The compressed size (0 when not compressed).
    public var compressedSize: Int
    /// The upload cursor after these changesets: the client version...
    public var progressClientVersion: UInt64
    /// ... and the server version it had integrated.
    public var progressServerVersion: UInt64
    /// The server version the client locks (no history before it may be trimmed).
    public var lockedServerVersion: UInt64
    /// The body as sent (compressed when ``isCompressed``).
    public var body: [UInt8]

    /// An upload message from its fields; ``body`` must match the sizes.
    public init(
        session: UInt64, isCompressed: Bool, uncompressedSize: Int, compressedSize: Int,
        progressClientVersion: UInt64, progressServerVersion: UInt64, lockedServerVersion: UInt64, body: [UInt8]
    ) {
        self.session = session
        self.isCompressed = isCompressed
        self.uncompressedSize = uncompressedSize
        self.compressedSize = compressedSize
        self.progressClientVersion = progressClientVersion
        self.progressServerVersion = progressServerVersion
        self.lockedServerVersion = lockedServerVersion
        self.body = body
    }

    /// An upload of `changesets`, compressed as the Realm client does it: only
    /// when the body is over 1,024 bytes and compression makes it smaller
    /// (or always, or never, when `compress` says so).
    public init(
        session: UInt64, changesets: [UploadChangeset], progressClientVersion: UInt64,
        progressServerVersion: UInt64, lockedServerVersion: UInt64, compress: Bool? = nil
    ) {
        var plain: [UInt8] = []
        for changeset in changesets {
            ChangesetList.append(
                [
                    changeset.clientVersion, changeset.lastIntegratedServerVersion, changeset.originTimestamp,
                    changeset.originFileIdent,
                ], changeset.data, to: &plain)
        }
        var packed: [UInt8]?
        if compress ?? (plain.count > 1024) {
            // zlib fails only on a broken installation; then the body goes plain.
            packed = try? Gzip.compress(plain, level: 6, wrapper: .zlib)
            if compress == nil, let result = packed, result.count >= plain.count { packed = nil }
        }
        self.init(
            session: session, isCompressed: packed != nil, uncompressedSize: plain.count,
            compressedSize: packed?.count ?? 0, progressClientVersion: progressClientVersion,
            progressServerVersion: progressServerVersion, lockedServerVersion: lockedServerVersion,
            body: packed ?? plain)
    }

    /// The body uncompressed: inflated (zlib) to exactly ``uncompressedSize``
    /// bytes, or as sent.
    /// - Throws: ``SyncMessageError`` `badDecompression` when the body does not
    ///   inflate to the declared size, `limitExceeded` over `limits.maxBodyBytes`.
    public func uncompressedBody(limits: SyncMessageLimits = SyncMessageLimits()) throws(SyncMessageError) -> [UInt8] {
        try ChangesetList.uncompressed(body, isCompressed: isCompressed, uncompressedSize: uncompressedSize, limits: limits)
    }

    /// The changesets in the body, in order.
    /// - Throws: ``SyncMessageError`` (`badDecompression`, `badChangesetHeader`,
    ///   `badChangesetSize`, `limitExceeded`), offsets into the uncompressed body.
    public func changesets(limits: SyncMessageLimits = SyncMessageLimits()) throws(SyncMessageError) -> [UploadChangeset] {
        let list = try ChangesetList.parse(
            try uncompressedBody(limits: limits),
            fields: ["client-version", "last-integrated-server-version", "origin-timestamp", "origin-file-ident"], limits: limits)
        return list.map { numbers, data in
            UploadChangeset(
                clientVersion: numbers[0], lastIntegratedServerVersion: numbers[1], originTimestamp: numbers[2],
                originFileIdent: numbers[3], data: data)
        }
    }
}

extension MarkMessage {
    /// Reads the fields after the type (both directions share the grammar).
    init(header: inout SyncHeaderReader) throws(SyncMessageError) {
        self.init(session: try header.unsigned("session"), requestIdent: try header.unsigned("request-ident"))
        try header.end()
        _ = try header.body(count: 0)
    }

    /// The message as sent, in either direction.
    func encoded() -> [UInt8] {
        var out = SyncHeaderWriter("mark")
        out.field(session)
        out.field(requestIdent)
        return out.finish()
    }
}

/// `ping <timestamp> <rtt>`: a client heartbeat, answered by `pong <timestamp>`.
public struct PingMessage: Sendable, Hashable {
    /// The client's clock, in milliseconds.
    public var timestamp: Int64
    /// The round trip time the client measured last, in milliseconds.
    public var roundTripTime: Int64

    /// A ping message.
    public init(timestamp: Int64, roundTripTime: Int64) {
        self.timestamp = timestamp
        self.roundTripTime = roundTripTime
    }
}

/// `json_error <code> <size> <session>` then a JSON body, in both
/// directions: an error with the fields a Realm client requires.
public struct JSONErrorMessage: Sendable, Hashable {
    /// The error code.
    public var code: SyncErrorCode
    /// The session (0 for the connection).
    public var session: UInt64
    /// The JSON body, as text.
    public var bodyText: String

    /// A message with a JSON body given as text.
    public init(code: SyncErrorCode, session: UInt64, bodyText: String) {
        self.code = code
        self.session = session
        self.bodyText = bodyText
    }

    /// A message with the fields of `body`.
    public init(code: SyncErrorCode, session: UInt64, body: JSONErrorBody) {
        self.init(code: code, session: session, bodyText: body.jsonText)
    }

    /// The body's fields.
    /// - Throws: ``SyncMessageError`` `badJSON` when a required field is
    ///   missing or of the wrong type (as the Realm client would reject it).
    public func body() throws(SyncMessageError) -> JSONErrorBody { try JSONErrorBody(parsing: bodyText) }

    /// Reads the fields after the type (both directions share the grammar).
    init(header: inout SyncHeaderReader, limits: SyncMessageLimits) throws(SyncMessageError) {
        let code = SyncErrorCode(rawValue: try header.int32("error-code"))
        let size = try header.size("json-size", limit: limits.maxTextBytes)
        let session = try header.unsigned("session")
        try header.end()
        self.init(code: code, session: session, bodyText: try header.text(count: size, "json_error body"))
    }

    /// The message as sent, in either direction.
    func encoded() -> [UInt8] {
        var out = SyncHeaderWriter("json_error")
        out.field(code.rawValue)
        out.field(bodyText.utf8.count)
        out.field(session)
        return out.finish(body: Array(bodyText.utf8))
    }
}
