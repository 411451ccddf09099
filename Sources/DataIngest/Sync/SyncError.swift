import Foundation

/// An error reported by a sync session to ``SyncManager/errorHandler``, or
/// thrown by ``SyncSession/wait(for:timeout:)``.
///
/// ```swift
/// app.syncManager.errorHandler = { error, session in
///     if error.code == .objectsRejected {
///         for rejection in error.rejections { print(rejection.errorCode, rejection.reason) }
///     }
/// }
/// ```
public struct SyncError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What went wrong, as an extensible code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let rawValue: String
        /// Creates a code with the given name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server stored the segment but refused some of its objects; they
        /// are in quarantine (``SyncError/rejections`` lists them).
        public static let objectsRejected = Code("objectsRejected")
        /// The server refused the whole segment permanently (4xx other than
        /// 401/408/429); its objects are in quarantine.
        public static let segmentRejected = Code("segmentRejected")
        /// The server does not read this client's segment format version
        /// (`unsupported_segment_version`): the segments stay on disk and
        /// are retried with backoff until the server is upgraded.
        public static let serverTooOld = Code("serverTooOld")
        /// The refresh token is no longer valid: log the user in again. The
        /// data waits on disk.
        public static let invalidSession = Code("invalidSession")
        /// The user's segment store could not be opened or changed.
        public static let store = Code("store")
        /// ``SyncSession/wait(for:timeout:)`` timed out; uploading goes on.
        public static let timedOut = Code("timedOut")
        /// The session stopped (the user logged out) while waiting.
        public static let sessionStopped = Code("sessionStopped")
    }

    /// One object the server refused.
    public struct Rejection: Sendable, Hashable {
        /// The record's index in its segment.
        public var index: Int
        /// Its collection.
        public var collection: String
        /// Its `_id` as relaxed Extended JSON, if the server could read it.
        public var id: String?
        /// The server's code, e.g. `wrongType`, `missingRequiredField`, `transactionRejected`.
        public var errorCode: String
        /// The server's reason.
        public var reason: String
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The segment involved, if any.
    public var segmentNumber: UInt64?
    /// The HTTP status, if the server answered.
    public var httpStatus: Int?
    /// The server's `error_code` for a rejected segment or request.
    public var serverCode: String?
    /// The refused objects, for ``Code/objectsRejected`` and ``Code/segmentRejected``.
    public var rejections: [Rejection]

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, segmentNumber: UInt64? = nil, httpStatus: Int? = nil,
        serverCode: String? = nil, rejections: [Rejection] = []
    ) {
        self.code = code
        self.message = message
        self.segmentNumber = segmentNumber
        self.httpStatus = httpStatus
        self.serverCode = serverCode
        self.rejections = rejections
    }

    public var description: String {
        var text = "SyncError(\(code)): \(message)"
        if let httpStatus { text += " [HTTP \(httpStatus)\(serverCode.map { " \($0)" } ?? "")]" }
        return text
    }

    public var errorDescription: String? { description }
}
