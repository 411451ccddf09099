/// Decides whether a request that asks to switch protocols (`Connection:
/// Upgrade` and `Upgrade: <protocol>`, RFC 9110 §7.8) gets its connection
/// switched, for example to a WebSocket. It runs on a worker thread, as an
/// ``HTTPHandler`` does, so it may block (check a token in a database).
///
/// A thrown error becomes its response (as for ``HTTPHandler``) and the
/// connection stays HTTP.
///
/// ```swift
/// router.upgrade("/api/client/v2.0/app/{appId}/realm-sync") { request in
///     guard request.headers["upgrade"]?.lowercased() == "websocket" else {
///         return .refuse(.error(.upgradeRequired, code: "websocket_required", message: "Upgrade to websocket."))
///     }
///     return .accept(headers: ["Upgrade": "websocket", "Sec-WebSocket-Accept": accept]) { connection in
///         // A thread of its own: blocking reads and writes are fine here.
///         while let bytes = try? connection.read(), !bytes.isEmpty { ... }
///     }
/// }
/// ```
public typealias HTTPUpgradeHandler = @Sendable (HTTPRequest) throws -> HTTPUpgradeDecision

/// The code that owns an upgraded connection: it runs on a thread of its own
/// once `101 Switching Protocols` is queued, and the connection is closed
/// when it returns.
public typealias HTTPUpgradedSession = @Sendable (HTTPUpgradedConnection) -> Void

/// What an ``HTTPUpgradeHandler`` decided.
public enum HTTPUpgradeDecision: Sendable {
    /// Switch protocols: the server answers `101 Switching Protocols` with
    /// `headers` (for example `Upgrade: websocket` and
    /// `Sec-WebSocket-Accept`; the server adds `Connection: Upgrade` and
    /// `Date`), stops reading the connection as HTTP and hands it to `session`
    /// on a thread of its own, with the bytes the client sent after the
    /// request (``HTTPUpgradedConnection/read(maxBytes:timeout:)`` returns them first).
    case accept(headers: HTTPHeaders, session: HTTPUpgradedSession)
    /// Stay HTTP: answer with `response` (for example 400, or 426 with the
    /// protocols the endpoint speaks); the connection serves further requests.
    case refuse(HTTPResponse)
}
