import Foundation
import IngestCore
import IngestSupport

/// A logged-in user of an ``App``: its tokens, its sync session and the
/// synced realm configuration that writes into its segment store.
///
/// ```swift
/// let user = try await app.login(credentials: .anonymous)
/// var config = user.flexibleSyncConfiguration()
/// config.objectTypes = [WeatherSensor.self]
/// ```
// @unchecked Sendable: the mutable record (tokens, state) is in a LockedBox;
// token refreshes are serialized by the `RefreshGate` actor.
public final class User: @unchecked Sendable {
    /// Whether the user can upload.
    public enum State: String, Sendable {
        /// Logged in: the session uploads.
        case loggedIn
        /// Logged out; pending data stays on disk for the next login.
        case loggedOut
        /// Removed from the app's users; pending data stays on disk.
        case removed
    }

    /// The server's user id (24 hex digits). A user created by an anonymous
    /// login without a server (see ``App/login(credentials:)``) has a local id,
    /// `local-` and 24 hex digits, until its first successful login.
    public var id: String { record.id }
    /// The app the user belongs to.
    public let app: App
    /// The auth provider the user logged in with (`anon-user`, `local-userpass`, `api-key`, `custom-token`).
    public let provider: String
    /// The user's sync session: it uploads the user's segment store and keeps
    /// running after the realms are released, until the user logs out.
    public let session: SyncSession

    let box: LockedBox<UserRecord>
    let gate = RefreshGate()
    /// The user's folder under `users/` (``UserRecord/key``): its id, or the
    /// local id it was created with offline.
    let key: String

    init(app: App, record: UserRecord) {
        self.key = record.key
        self.app = app
        self.provider = record.provider
        self.box = LockedBox(record)
        self.session = SyncSession(app: app, storeDirectory: app.records.storeDirectory(record.key))
        session.user = self
    }

    var record: UserRecord { box.withLock { $0 } }
    var loggedInAt: Int64 { record.loggedInAtMillis }

    /// The device id the server assigned.
    public var deviceId: String { record.deviceId }
    /// The user's state.
    public var state: State {
        switch record.state {
        case .loggedIn: .loggedIn
        case .loggedOut: .loggedOut
        case .removed: .removed
        }
    }
    /// Whether the user is logged in.
    public var isLoggedIn: Bool { state == .loggedIn }
    /// The current access token (a JWT), if logged in.
    public var accessToken: String? { record.accessToken }
    /// The current refresh token, if any.
    public var refreshToken: String? { record.refreshToken }
    /// Where the user's segment store lives.
    public var storeDirectory: String { session.storeDirectory }

    func update(_ record: UserRecord) { box.withLock { $0 = record } }

    /// Saves the record after `change`.
    func change(_ change: (inout UserRecord) -> Void) throws(AppError) {
        let updated = box.withLock { record -> UserRecord in
            change(&record)
            return record
        }
        try app.records.save(updated)
    }

    // MARK: - Tokens

    /// An access token that is not about to expire, refreshed first if needed.
    func validAccessToken() async throws(AppError) -> String {
        let current = record
        if current.state == .loggedIn && current.awaitingLogin == true { return try await completeOfflineLogin() }
        guard current.state == .loggedIn, let token = current.accessToken else {
            throw AppError(.userLoggedOut, "user \(id) is logged out; log in again to upload")
        }
        let claims = AccessTokenClaims(token: token)
        if claims.needsRefresh(now: app.configuration.sync.clock.wallTime(), margin: app.configuration.tokenRefreshMargin) {
            return try await refreshAccessToken(replacing: token)
        }
        return token
    }

    /// Refreshes the access token unless another caller already replaced
    /// `rejected` (the token the server refused).
    @discardableResult
    func refreshAccessToken(replacing rejected: String?) async throws(AppError) -> String {
        do {
            return try await gate.run(on: app.syncExecutor) { [self] in
                let current = record
                if let rejected, let token = current.accessToken, token != rejected { return token }
                guard let refreshToken = current.refreshToken else {
                    throw AppError(.invalidSession, "user \(id) has no refresh token; log in again")
                }
                let response = try await app.request("POST", ProtocolRoutes.sessionPath, bearer: refreshToken)
                guard response.status == 201 || response.status == 200 else {
                    throw app.authError(response, action: "refresh the access token of user \(id)")
                }
                let answer = try app.decode(SessionAnswer.self, response, missing: "the refresh answer has no access_token")
                let access = answer.accessToken
                let rotated = answer.refreshToken
                try change { record in
                    record.accessToken = access
                    if let rotated { record.refreshToken = rotated }
                }
                return access
            }
        } catch let error as AppError {
            throw error
        } catch {
            throw AppError(.network, "refreshing the access token failed: \(error)", underlyingError: error)
        }
    }

    /// Logs a logged-out user back in with its stored refresh token and
    /// restarts its session (anonymous users with pending data).
    func resumeSession() async throws(AppError) {
        if record.awaitingLogin == true {
            // Created offline: nothing to refresh; its session logs it in.
            try change {
                $0.state = .loggedIn; $0.loggedInAtMillis = Int64(Date().timeIntervalSince1970 * 1000)
            }
            session.start()
            return
        }
        try change {
            $0.state = .loggedIn; $0.accessToken = nil
        }
        do {
            // The sentinel forces a refresh: no stored access token equals it.
            try await refreshAccessToken(replacing: "")
        } catch {
            try? change { $0.state = .loggedOut }
            throw error
        }
        try change { $0.loggedInAtMillis = Int64(Date().timeIntervalSince1970 * 1000) }
        session.start()
    }

    /// Whether the store directory holds segments not yet acknowledged.
    var hasPendingDataOnDisk: Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: storeDirectory)) ?? []
        return names.contains { $0.hasSuffix(".seg.gz") || $0.hasSuffix(".active") }
    }
}

/// Serializes token refreshes: concurrent callers share one request.
actor RefreshGate {
    private var running: Task<String, any Error>?

    func run(on executor: SyncExecutor, _ operation: @escaping @Sendable () async throws -> String) async throws -> String {
        if let running { return try await running.value }
        let task = Task(executorPreference: executor) { try await operation() }
        running = task
        defer { running = nil }
        return try await task.value
    }
}
