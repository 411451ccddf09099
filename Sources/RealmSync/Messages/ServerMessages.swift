import Foundation
import IngestCore

/// `ident <session> <file-ident> <salt>`: the server's answer to a `bind`
/// that asked for a client file identifier. The client keeps both and names
/// its file with them from then on.
public struct ServerIdentMessage: Sendable, Hashable {
    /// The session.
    public var session: UInt64
    /// The new client file identifier (never 0).
    public var fileIdent: UInt64
    /// Its salt (a random number the client sends back in its `ident`).
    public var fileIdentSalt: Int64

    /// An ident answer.
    public init(session: UInt64, fileIdent: UInt64, fileIdentSalt: Int64) {
        self.session = session
        self.fileIdent = fileIdent
        self.fileIdentSalt = fileIdentSalt
    }
}

/// Where a Flexible Sync download batch stands (the `batch-state` field).
public enum DownloadBatchState: Int, Sendable, Hashable, CaseIterable {
    /// More messages of this batch follow.
    case moreToCome = 0
    /// The last message of a bootstrap batch.
    case lastInBatch = 1
    /// Steady state: changesets as they come (every acknowledgement of an
    /// asymmetric upload).
    case steadyState = 2
}

/// `download <session> <download-server-version> <download-client-version>
/// <latest-server-version> <latest-server-salt> <upload-client-version>
/// <upload-server-version> <query-version> <batch-state> <progress>
/// <is-compressed> <uncompressed-size> <compressed-size>` then changesets.
/// With no changesets it is the acknowledgement of uploads: the client
/// discards its copy of every changeset up to `downloadClientVersion`.
public struct DownloadMessage: Sendable, Hashable {
    /// The session.
    public var session: UInt64
    /// The download cursor: the server version after this message...
    public var downloadServerVersion: UInt64
    /// ... and the last client version integrated into it.
    public var downloadClientVersion: UInt64
    /// The latest server version.
    public var latestServerVersion: UInt64
    /// Its salt.
    public var latestServerVersionSalt: Int64
    /// The upload cursor the server has: the client version...
    public var uploadClientVersion: UInt64
    /// ... and the server version it had integrated.
    public var uploadServerVersion: UInt64
    /// The query version this download belongs to.
    public var queryVersion: Int64
    /// Where the batch stands.
    public var batchState: DownloadBatchState
    /// The estimated download progress, 0...1.
    public var progress: Double
    /// Whether ``body`` is zlib-compressed.
    public var isCompressed: Bool
    /// The body's size uncompressed.
    public var uncompressedSize: Int
    /// The compressed size (0 when not compressed).
    public var compressedSize: Int
    /// The changesets, as sent.
    public var body: [UInt8]

    /// A download message; by default an acknowledgement with an empty body
    /// in steady state, progress 1.
    public init(
        session: UInt64, downloadServerVersion: UInt64, downloadClientVersion: UInt64,
        latestServerVersion: UInt64, latestServerVersionSalt: Int64, uploadClientVersion: UInt64,
        uploadServerVersion: UInt64, queryVersion: Int64 = 0, batchState: DownloadBatchState = .steadyState,
        progress: Double = 1, isCompressed: Bool = false, uncompressedSize: Int = 0, compressedSize: Int = 0,
        body: [UInt8] = []
    ) {
        self.session = session
        self.downloadServerVersion = downloadServerVersion
        self.downloadClientVersion = downloadClientVersion
        self.latestServerVersion = latestServerVersion
        self.latestServerVersionSalt = latestServerVersionSalt
        self.uploadClientVersion = uploadClientVersion
        self.uploadServerVersion = uploadServerVersion
        self.queryVersion = queryVersion
        self.batchState = batchState
        self.progress = progress
        self.isCompressed = isCompressed
        self.uncompressedSize = uncompressedSize
        self.compressedSize = compressedSize
        self.body = body
    }

    /// Sets ``body`` (uncompressed) and its sizes from `changesets`.
    public mutating func setChangesets(_ changesets: [DownloadChangeset]) {
        var plain: [UInt8] = []
        for changeset in changesets {
            ChangesetList.append(
                [
                    changeset.serverVersion, changeset.lastIntegratedClientVersion, changeset.originTimestamp,
                    changeset.originFileIdent, changeset.originalSize,
                ], changeset.data, to: &plain)
        }
        isCompressed = false
        uncompressedSize = plain.count
        compressedSize = 0
        body = plain
    }

    /// The changesets in the body.
    /// - Throws: ``SyncMessageError`` as ``UploadMessage/changesets(limits:)`` does.
    public func changesets(limits: SyncMessageLimits = SyncMessageLimits()) throws(SyncMessageError) -> [DownloadChangeset] {
        let plain = try ChangesetList.uncompressed(body, isCompressed: isCompressed, uncompressedSize: uncompressedSize, limits: limits)
        let list = try ChangesetList.parse(
            plain, fields: ["server-version", "client-version", "origin-timestamp", "origin-file-ident", "original-size"],
            limits: limits)
        return list.map { numbers, data in
            DownloadChangeset(
                serverVersion: numbers[0], lastIntegratedClientVersion: numbers[1], originTimestamp: numbers[2],
                originFileIdent: numbers[3], originalSize: numbers[4], data: data)
        }
    }

    /// The progress as C++ streams print a double (`%g`: `1`, `0.5`), as
    /// Realm's server writes it; with 17 significant digits when `%g`'s six
    /// would read back as another number (`0.1002001`), so that the reader
    /// gets the value that was sent (found by the `syncmessage` fuzz target).
    var progressText: String {
        let short = String(format: "%g", progress)
        return Double(short) == progress ? short : String(format: "%.17g", progress)
    }
}

/// `error <code> <size> <try-again> <session>` then the message text: the
/// older, plain-text error form.
public struct ErrorMessage: Sendable, Hashable {
    /// The error code.
    public var code: SyncErrorCode
    /// What happened.
    public var message: String
    /// Whether the client may try again (false: fatal).
    public var tryAgain: Bool
    /// The session (0 for the connection).
    public var session: UInt64

    /// An error message.
    public init(code: SyncErrorCode, message: String, tryAgain: Bool, session: UInt64) {
        self.code = code
        self.message = message
        self.tryAgain = tryAgain
        self.session = session
    }
}

/// `log_message <session> <size>` then JSON (`{"level":"info","msg":"..."}`):
/// a line for the client's log.
public struct LogMessage: Sendable, Hashable {
    /// The session (0 for the connection).
    public var session: UInt64
    /// The JSON body, as text.
    public var bodyText: String

    /// A log message with a JSON body given as text.
    public init(session: UInt64, bodyText: String) {
        self.session = session
        self.bodyText = bodyText
    }

    /// A log message at `level` (`fatal`, `error`, `warn`, `info`, `detail`,
    /// `debug`, `trace`) with the text `message`.
    public init(session: UInt64, level: String, message: String) {
        self.init(
            session: session,
            bodyText: JSONValue.object([
                .init(key: "level", value: .string(level)), .init(key: "msg", value: .string(message)),
            ]).jsonText)
    }
}

/// `query_error <code> <size> <session> <query-version>` then the message:
/// a subscription set the server cannot serve.
public struct QueryErrorMessage: Sendable, Hashable {
    /// The error code.
    public var code: SyncErrorCode
    /// What is wrong with the query.
    public var message: String
    /// The session.
    public var session: UInt64
    /// The query version concerned.
    public var queryVersion: Int64

    /// A query error.
    public init(code: SyncErrorCode, message: String, session: UInt64, queryVersion: Int64) {
        self.code = code
        self.message = message
        self.session = session
        self.queryVersion = queryVersion
    }
}
