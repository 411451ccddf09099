/// A Realm sync protocol error code, as `error` and `json_error` messages
/// carry it. Codes 100-199 concern the connection, 200-299 a session
/// (realm-core's `ProtocolError`).
///
/// ```swift
/// let message = ServerMessage.jsonError(JSONErrorMessage(
///     code: .badChangeset, session: 1, body: JSONErrorBody(message: "bad changeset", tryAgain: false)))
/// ```
public struct SyncErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The numeric code on the wire.
    public var rawValue: Int
    /// A code from its number.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Whether the code concerns one session (200-299) rather than the connection.
    public var isSessionLevel: Bool { (200...299).contains(rawValue) }

    public var description: String { String(rawValue) }

    // Connection level.
    /// 100: the connection closed without an error.
    public static let connectionClosed = SyncErrorCode(rawValue: 100)
    /// 101: another connection-level error.
    public static let otherError = SyncErrorCode(rawValue: 101)
    /// 102: an unknown type of message.
    public static let unknownMessage = SyncErrorCode(rawValue: 102)
    /// 103: bad syntax in a message's header line.
    public static let badSyntax = SyncErrorCode(rawValue: 103)
    /// 104: a message over a limit.
    public static let limitsExceeded = SyncErrorCode(rawValue: 104)
    /// 106: a session identifier that is not bound.
    public static let badSessionIdent = SyncErrorCode(rawValue: 106)
    /// 107: a session identifier reused while still bound.
    public static let reuseOfSessionIdent = SyncErrorCode(rawValue: 107)
    /// 108: the client file is bound in another session.
    public static let boundInOtherSession = SyncErrorCode(rawValue: 108)
    /// 109: a message out of order.
    public static let badMessageOrder = SyncErrorCode(rawValue: 109)
    /// 110: an upload body that does not decompress.
    public static let badDecompression = SyncErrorCode(rawValue: 110)
    /// 111: bad syntax in a changeset header inside an upload.
    public static let badChangesetHeaderSyntax = SyncErrorCode(rawValue: 111)
    /// 112: a changeset size that does not fit the upload body.
    public static let badChangesetSize = SyncErrorCode(rawValue: 112)
    /// 113: the client should use Flexible Sync.
    public static let switchToFlexibleSync = SyncErrorCode(rawValue: 113)
    /// 114: the client should use partition-based sync.
    public static let switchToPartitionSync = SyncErrorCode(rawValue: 114)

    // Session level.
    /// 200: the session closed without an error.
    public static let sessionClosed = SyncErrorCode(rawValue: 200)
    /// 201: another session-level error.
    public static let otherSessionError = SyncErrorCode(rawValue: 201)
    /// 202: the access token expired; the client refreshes it and reconnects.
    public static let tokenExpired = SyncErrorCode(rawValue: 202)
    /// 203: bad user authentication.
    public static let badAuthentication = SyncErrorCode(rawValue: 203)
    /// 204: an illegal realm path.
    public static let illegalRealmPath = SyncErrorCode(rawValue: 204)
    /// 206: permission denied.
    public static let permissionDenied = SyncErrorCode(rawValue: 206)
    /// 208: a client file identifier the server does not know (or a wrong salt).
    public static let badClientFileIdent = SyncErrorCode(rawValue: 208)
    /// 209: a bad server version in a cursor.
    public static let badServerVersion = SyncErrorCode(rawValue: 209)
    /// 210: a bad client version in a cursor.
    public static let badClientVersion = SyncErrorCode(rawValue: 210)
    /// 211: the client's history diverged from the server's.
    public static let divergingHistories = SyncErrorCode(rawValue: 211)
    /// 212: a changeset that cannot be decoded or applied.
    public static let badChangeset = SyncErrorCode(rawValue: 212)
    /// 215: a session feature the server does not support.
    public static let unsupportedSessionFeature = SyncErrorCode(rawValue: 215)
    /// 216: a bad origin file identifier in an uploaded changeset.
    public static let badOriginFileIdent = SyncErrorCode(rawValue: 216)
    /// 217: synchronization is no longer possible for the client's file.
    public static let badClientFile = SyncErrorCode(rawValue: 217)
    /// 223: the client file belongs to another user.
    public static let userMismatch = SyncErrorCode(rawValue: 223)
    /// 224: too many sessions on one connection.
    public static let tooManySessions = SyncErrorCode(rawValue: 224)
    /// 225: a schema change the server does not accept.
    public static let invalidSchemaChange = SyncErrorCode(rawValue: 225)
    /// 226: a query the server cannot run.
    public static let badQuery = SyncErrorCode(rawValue: 226)
    /// 230: a write the server does not allow.
    public static let writeNotAllowed = SyncErrorCode(rawValue: 230)
    /// 231: objects the server rejected (a compensating write, with
    /// `rejectedUpdates` in the JSON body).
    public static let compensatingWrite = SyncErrorCode(rawValue: 231)
    /// 233: bad progress information.
    public static let badProgress = SyncErrorCode(rawValue: 233)
    /// 235: a schema version the server does not accept.
    public static let badSchemaVersion = SyncErrorCode(rawValue: 235)
}

/// What the server asks the client to do after a `json_error` (the `action`
/// field). A client that does not know the name treats it as `ApplicationBug`.
public struct SyncErrorAction: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The name on the wire.
    public var rawValue: String
    /// An action from its name.
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The client broke the protocol; it stops syncing the file.
    public static let protocolViolation = SyncErrorAction(rawValue: "ProtocolViolation")
    /// An error in the app's use of sync; the session stops.
    public static let applicationBug = SyncErrorAction(rawValue: "ApplicationBug")
    /// A warning; the session goes on.
    public static let warning = SyncErrorAction(rawValue: "Warning")
    /// A temporary failure; the client reconnects after a back-off.
    public static let transient = SyncErrorAction(rawValue: "Transient")
    /// The client deletes its local realm.
    public static let deleteRealm = SyncErrorAction(rawValue: "DeleteRealm")
    /// The client resets its file (with recovery when allowed).
    public static let clientReset = SyncErrorAction(rawValue: "ClientReset")
    /// The client resets its file without recovery.
    public static let clientResetNoRecovery = SyncErrorAction(rawValue: "ClientResetNoRecovery")
    /// The client refreshes its access token and reconnects.
    public static let refreshUser = SyncErrorAction(rawValue: "RefreshUser")
    /// The client asks for the location again and reconnects.
    public static let refreshLocation = SyncErrorAction(rawValue: "RefreshLocation")
    /// The client logs its user out.
    public static let logOutUser = SyncErrorAction(rawValue: "LogOutUser")
}
