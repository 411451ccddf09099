import Foundation
import IngestCore
import IngestSupport
import Logging
import RealmSync

/// The Realm sync endpoint's domain side, knowing nothing of sockets: it
/// authenticates the access token a Realm client presents at the WebSocket
/// upgrade and creates one ``RealmSyncConnection`` per connection, which
/// turns the client's sync messages into the server's answers and writes
/// the uploaded objects through the ``UploadService`` (the same sinks,
/// receipts and validation as sealed segments). Routes/RealmSyncRoute.swift
/// is its WebSocket adapter; Docs/RealmCompatibility.md describes what a
/// Realm app gets.
///
/// ```swift
/// let realm = RealmSyncService(uploads: uploads, auth: auth)
/// let claims = try realm.authenticate(appId: appId, token: baasAt)
/// let connection = realm.connection(appId: appId, claims: claims)
/// for message in connection.receive(bytes).messages { send(message.encoded()) }
/// ```
package final class RealmSyncService: Sendable {
    /// Limits of the endpoint, each with a documented default.
    package struct Configuration: Sendable {
        /// The largest WebSocket message (and so sync message) accepted:
        /// Realm's own hard limit of 16 MiB per upload, plus its header.
        /// A larger message closes the connection with 1009. Default 16 MiB + 4 KiB.
        package var maxMessageBytes = (16 << 20) + 4096
        /// Seconds a connection may stay silent (Realm clients ping every
        /// minute); then it is closed. Default 180.
        package var idleTimeoutSeconds: Double = 180
        /// Seconds a write may stall because the client does not read; then
        /// the connection is closed. Default 30.
        package var writeTimeoutSeconds: Double = 30
        /// Open sync connections above which an upgrade gets 503. Default 1024
        /// (the server's HTTP connection limit, which ``IngestService`` passes).
        package var maxConnections = 1024
        /// Sessions one connection may bind at once. Default 64.
        package var maxSessionsPerConnection = 64
        /// Limits of the sync messages (bodies, queries, changesets).
        package var messageLimits = SyncMessageLimits()

        /// Creates the defaults.
        package init() {}
    }

    let uploads: UploadService
    let auth: AuthService
    package let configuration: Configuration
    let logger: Logger
    private let open = LockedBox(0)

    /// Creates the service.
    package init(
        uploads: UploadService, auth: AuthService, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "ingest-server.realm-sync")
    ) {
        self.uploads = uploads
        self.auth = auth
        self.configuration = configuration
        self.logger = logger
    }

    /// Whether `appId` is an app of this server.
    package func hasApp(_ appId: String) -> Bool { uploads.apps[appId] != nil }

    /// Verifies the access token of an upgrade (`baas_at`) for `appId`.
    /// - Throws: ``AuthError`` (`invalid_token`, `expired_token`, `wrong_app`, `unknown_app`).
    package func authenticate(appId: String, token: String?) throws(AuthError) -> AccessClaims {
        guard let token, !token.isEmpty else {
            throw AuthError(.invalidToken, "send the access token in the baas_at query parameter", appId: appId)
        }
        return try auth.verifyAccessToken(token, appId: appId)
    }

    /// Counts a connection in; false when ``Configuration/maxConnections`` are open.
    package func admitConnection() -> Bool {
        open.withLock { count in
            guard count < configuration.maxConnections else { return false }
            count += 1
            return true
        }
    }

    /// Counts a connection out.
    package func connectionClosed() { open.withLock { $0 -= 1 } }

    /// Open sync connections.
    package var openConnections: Int { open.withLock { $0 } }

    /// A new connection's protocol state.
    package func connection(appId: String, claims: AccessClaims, protocolVersion: Int = SyncProtocolVersion.current) -> RealmSyncConnection
    {
        RealmSyncConnection(service: self, appId: appId, claims: claims, protocolVersion: protocolVersion)
    }
}
