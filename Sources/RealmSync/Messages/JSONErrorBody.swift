import Foundation
import IngestCore

/// The JSON body of a `json_error` message. A Realm client (realm-core 14)
/// requires the six fields `message`, `isRecoveryModeDisabled`, `tryAgain`,
/// `logURL`, `shouldClientReset` and `action`, each of its JSON type, and
/// rejects the message otherwise; this type always writes all six.
///
/// ```swift
/// var body = JSONErrorBody(message: "SensorReading: temperature must be a float", tryAgain: false,
///                          action: .warning)
/// body.rejectedUpdates = [.init(table: "SensorReading", primaryKey: .objectId(id), reason: "...")]
/// body.rejectedClientVersion = 7
/// let message = JSONErrorMessage(code: .compensatingWrite, session: 1, body: body)
/// ```
public struct JSONErrorBody: Sendable, Hashable {
    /// What happened, for the app's log.
    public var message: String
    /// Whether a client reset may not recover local changes.
    public var isRecoveryModeDisabled: Bool
    /// Whether the client may retry (false: the error is fatal for the session).
    public var tryAgain: Bool
    /// A URL with more detail (may be empty).
    public var logURL: String
    /// Whether the client must reset its file.
    public var shouldClientReset: Bool
    /// What the client should do.
    public var action: SyncErrorAction
    /// A reconnection back-off the server asks for.
    public var backoff: Backoff?
    /// Objects the server rejected (a compensating write, code 231).
    public var rejectedUpdates: [RejectedUpdate]?
    /// The server version that carries the compensating write, if any.
    public var compensatingWriteServerVersion: UInt64?
    /// The client version whose changes were rejected (required with
    /// ``rejectedUpdates``).
    public var rejectedClientVersion: UInt64?

    /// A reconnection back-off.
    public struct Backoff: Sendable, Hashable {
        /// The first delay, in seconds.
        public var intervalSeconds: Int
        /// The longest delay, in seconds.
        public var maxDelaySeconds: Int
        /// The factor between delays.
        public var multiplier: Int

        /// A back-off with the given figures.
        public init(intervalSeconds: Int, maxDelaySeconds: Int, multiplier: Int) {
            self.intervalSeconds = intervalSeconds
            self.maxDelaySeconds = maxDelaySeconds
            self.multiplier = multiplier
        }
    }

    /// One rejected object: its table, its primary key and why.
    public struct RejectedUpdate: Sendable, Hashable {
        /// The class (table) name.
        public var table: String
        /// The object's primary key (sent base64-encoded as a changeset value).
        public var primaryKey: PrimaryKey
        /// Why it was rejected.
        public var reason: String

        /// A rejected object.
        public init(table: String, primaryKey: PrimaryKey, reason: String) {
            self.table = table
            self.primaryKey = primaryKey
            self.reason = reason
        }
    }

    /// A body with the given fields; the optional parts are left out.
    public init(
        message: String, isRecoveryModeDisabled: Bool = false, tryAgain: Bool, logURL: String = "",
        shouldClientReset: Bool = false, action: SyncErrorAction = .applicationBug
    ) {
        self.message = message
        self.isRecoveryModeDisabled = isRecoveryModeDisabled
        self.tryAgain = tryAgain
        self.logURL = logURL
        self.shouldClientReset = shouldClientReset
        self.action = action
    }

    /// The JSON text, compact, fields in a fixed order.
    public var jsonText: String {
        var members: [JSONValue.Member] = [
            .init(key: "message", value: .string(message)),
            .init(key: "isRecoveryModeDisabled", value: .bool(isRecoveryModeDisabled)),
            .init(key: "tryAgain", value: .bool(tryAgain)),
            .init(key: "logURL", value: .string(logURL)),
            .init(key: "shouldClientReset", value: .bool(shouldClientReset)),
            .init(key: "action", value: .string(action.rawValue)),
        ]
        if let backoff {
            members.append(.init(key: "backoffIntervalSec", value: .number(String(backoff.intervalSeconds))))
            members.append(.init(key: "backoffMaxDelaySec", value: .number(String(backoff.maxDelaySeconds))))
            members.append(.init(key: "backoffMultiplier", value: .number(String(backoff.multiplier))))
        }
        if let rejectedUpdates {
            members.append(
                .init(
                    key: "rejectedUpdates",
                    value: .array(
                        rejectedUpdates.map { update in
                            .object([
                                .init(key: "table", value: .string(update.table)),
                                .init(key: "pk", value: .string(update.primaryKey.base64Encoded)),
                                .init(key: "reason", value: .string(update.reason)),
                            ])
                        })))
        }
        if let compensatingWriteServerVersion {
            members.append(.init(key: "compensatingWriteServerVersion", value: .number(String(compensatingWriteServerVersion))))
        }
        if let rejectedClientVersion {
            members.append(.init(key: "rejectedClientVersion", value: .number(String(rejectedClientVersion))))
        }
        return JSONValue.object(members).jsonText
    }

    /// Reads a body as the Realm client does: the six required fields must be
    /// there with their types; the back-off and compensating-write fields are
    /// read when present. Unknown fields are ignored.
    /// - Throws: ``SyncMessageError`` with code `badJSON`.
    public init(parsing text: String) throws(SyncMessageError) {
        func bad(_ message: String) -> SyncMessageError { SyncMessageError(.badJSON, offset: 0, message: message) }
        let value: JSONValue
        do { value = try JSONValue(parsing: text, maxDepth: 16) } catch { throw bad("the json_error body is not JSON: \(error)") }
        guard case .object(let members) = value else { throw bad("the json_error body is not a JSON object") }
        func member(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }
        func string(_ key: String) throws(SyncMessageError) -> String {
            guard case .string(let text)? = member(key) else { throw bad("json_error needs the string '\(key)'") }
            return text
        }
        func bool(_ key: String) throws(SyncMessageError) -> Bool {
            guard case .bool(let flag)? = member(key) else { throw bad("json_error needs the boolean '\(key)'") }
            return flag
        }
        func integer(_ key: String, in object: [JSONValue.Member]? = nil) throws(SyncMessageError) -> Int64? {
            let found = (object ?? members).first { $0.key == key }?.value
            guard let found else { return nil }
            guard case .number(let lexeme) = found, let number = Int64(lexeme) else {
                throw bad("'\(key)' in json_error must be an integer")
            }
            return number
        }
        self.init(
            message: try string("message"), isRecoveryModeDisabled: try bool("isRecoveryModeDisabled"),
            tryAgain: try bool("tryAgain"), logURL: try string("logURL"),
            shouldClientReset: try bool("shouldClientReset"), action: SyncErrorAction(rawValue: try string("action")))
        if let interval = try integer("backoffIntervalSec") {
            guard let maxDelay = try integer("backoffMaxDelaySec"), let multiplier = try integer("backoffMultiplier"),
                let a = Int(exactly: interval), let b = Int(exactly: maxDelay), let c = Int(exactly: multiplier)
            else {
                throw bad("backoffIntervalSec needs backoffMaxDelaySec and backoffMultiplier")
            }
            backoff = Backoff(intervalSeconds: a, maxDelaySeconds: b, multiplier: c)
        }
        if let updates = member("rejectedUpdates") {
            guard case .array(let elements) = updates else { throw bad("rejectedUpdates must be an array") }
            var parsed: [RejectedUpdate] = []
            for element in elements {
                guard case .object(let fields) = element,
                    case .string(let table)? = fields.first(where: { $0.key == "table" })?.value,
                    case .string(let key)? = fields.first(where: { $0.key == "pk" })?.value,
                    case .string(let reason)? = fields.first(where: { $0.key == "reason" })?.value
                else {
                    throw bad("each rejected update needs the strings table, pk and reason")
                }
                let primaryKey: PrimaryKey
                do { primaryKey = try PrimaryKey(base64Encoded: key) } catch {
                    throw bad("a rejected update's pk is not a base64 changeset value: \(error.message)")
                }
                parsed.append(RejectedUpdate(table: table, primaryKey: primaryKey, reason: reason))
            }
            rejectedUpdates = parsed
            guard let version = try integer("rejectedClientVersion"), let clientVersion = UInt64(exactly: version) else {
                throw bad("rejectedUpdates needs rejectedClientVersion")
            }
            rejectedClientVersion = clientVersion
            if let version = try integer("compensatingWriteServerVersion") {
                guard let serverVersion = UInt64(exactly: version) else { throw bad("compensatingWriteServerVersion is negative") }
                compensatingWriteServerVersion = serverVersion
            }
        }
    }
}
