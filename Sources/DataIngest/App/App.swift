import Foundation
import IngestCore
import IngestSupport

/// A client of one app on an ingest server, as in the seed SDK: log users in
/// and open synced realms for them.
///
/// ```swift
/// let app = App(id: "dev-abc12345")
/// let user = try await app.login(credentials: .anonymous)
/// var config = user.flexibleSyncConfiguration()
/// config.objectTypes = [WeatherSensor.self]
/// let realm = try await Realm(configuration: config)
/// ```
///
/// Users and their tokens are kept under ``Configuration/metadataDirectory``;
/// a new `App` with the same id finds the users logged in before and resumes
/// uploading their pending data. Create one `App` per app id and process.
// @unchecked Sendable: the mutable user table is guarded by `users`' lock.
public final class App: @unchecked Sendable {
    /// The app id (the development server prints it).
    public let id: String
    /// The configuration it was created with.
    public let configuration: Configuration
    /// Sync settings and the app-level sync error handler.
    public let syncManager: SyncManager
    /// Registration and password operations for email/password users.
    public var emailPasswordAuth: EmailPasswordAuth { EmailPasswordAuth(app: self) }

    let transport: any SyncTransport
    /// Where the sessions' tasks run (see ``SyncExecutor``).
    let syncExecutor: SyncExecutor
    let records: UserRecordStore
    /// The users by ``User/key`` (their folder name: the user id, or the local
    /// id of a user created offline), and the current user's key.
    private let users = LockedBox<[String: User]>([:])
    private let current = LockedBox<String?>(nil)
    /// The error of reading the metadata directory at creation, if any.
    let metadataError: AppError?

    /// Creates the app client with the default configuration (base URL from
    /// `DATAINGEST_BASE_URL` or `http://127.0.0.1:9090`).
    public convenience init(id: String) {
        self.init(id: id, configuration: Configuration())
    }

    /// Creates the app client. Users logged in before (found in the metadata
    /// directory) are restored and their sessions resume uploading.
    public init(id: String, configuration: Configuration) {
        self.id = id
        self.configuration = configuration
        self.syncManager = SyncManager()
        self.syncExecutor = SyncExecutor(label: "dataingest.sync.\(id)")
        self.transport = configuration.makeTransport()
        self.records = UserRecordStore(
            appDirectory: configuration.metadataDirectory + "/" + Self.directoryName(id),
            fileSystem: configuration.segmentStore.fileSystem)
        var failure: AppError?
        do { try records.prepare() } catch { failure = error }
        self.metadataError = failure
        var restored: [String: User] = [:]
        for record in records.loadAll() {
            restored[record.key] = User(app: self, record: record)
        }
        users.withLock { $0 = restored }
        let currentId = records.currentUserId
        current.withLock { $0 = currentId }
        for user in restored.values where user.state == .loggedIn { user.session.start() }
        ExitUploads.shared.register(self)
    }

    /// The user logged in most recently and still logged in, if any.
    public var currentUser: User? {
        let id = current.withLock { $0 }
        let all = users.withLock { $0 }
        if let id, let user = all[id], user.state == .loggedIn { return user }
        return all.values.filter { $0.state == .loggedIn }.max { $0.loggedInAt < $1.loggedInAt }
    }

    /// Every logged-in user, keyed by user id.
    public var allUsers: [String: User] {
        let loggedIn = users.withLock { $0 }.values.filter { $0.state == .loggedIn }
        return Dictionary(loggedIn.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Logs in and returns the user; its sync session starts uploading
    /// whatever it has pending from an earlier run.
    ///
    /// ```swift
    /// let user = try await app.login(credentials: .anonymous)
    /// ```
    /// Logging in anonymously while an anonymous user is logged in returns
    /// that user; if an anonymous user logged out with data still pending,
    /// it is logged in again (its session resumed) so that data is uploaded.
    ///
    /// **A first start offline.** When an anonymous login cannot reach the
    /// server (no answer, or a 5xx), the user is created on the device
    /// instead: ``User/id`` is a local id (`local-` and 24 hex digits) until
    /// the server is reached, realms open and commit as usual, and the data
    /// stays on disk. The user's session logs it in anonymously as soon as the
    /// server answers (keeping the device id), then uploads; the user then has
    /// the server's id. Other credentials need the server: they throw.
    ///
    /// - Throws: ``AppError`` (`invalidCredentials`, `network`, …).
    public func login(credentials: Credentials) async throws -> User {
        if let metadataError { throw metadataError }
        if case .anonymous = credentials {
            let anonymous = users.withLock { $0 }.values.filter { $0.provider == "anon-user" }
            if let active = anonymous.first(where: { $0.state == .loggedIn }) {
                // Created offline: log it in now if the server answers (its session would anyway).
                if active.isAwaitingLogin { _ = try? await active.completeOfflineLogin() }
                return active
            }
            for user in anonymous where (user.record.refreshToken != nil || user.isAwaitingLogin) && user.hasPendingDataOnDisk {
                if (try? await user.resumeSession()) != nil {
                    try records.setCurrentUserId(user.key)
                    current.withLock { $0 = user.key }
                    return user
                }
            }
        }
        let deviceId = users.withLock { $0 }.values.max { $0.loggedInAt < $1.loggedInAt }?.deviceId
        let path = ProtocolRoutes.loginPath(appId: id, provider: credentials.provider)
        let answer = await requestResult("POST", path, body: credentials.loginRequest(deviceId: deviceId))
        if credentials.provider == Credentials.anonymous.provider, Self.serverUnreachable(answer) {
            return try startOffline(deviceId: deviceId)
        }
        let response = try answer.get()
        guard response.status == 200 else { throw authError(response, action: "log in") }
        let login = try decode(
            LoginAnswer.self, response,
            missing: "the login answer lacks access_token, refresh_token, user_id or device_id")
        let (accessToken, refreshToken, userId, device) = (login.accessToken, login.refreshToken, login.userId, login.deviceId)
        let record = UserRecord(
            id: userId, deviceId: device, provider: credentials.provider, accessToken: accessToken,
            refreshToken: refreshToken, state: .loggedIn, loggedInAtMillis: Int64(Date().timeIntervalSince1970 * 1000))
        // A user known before keeps its folder (one created offline: its local id).
        let known = users.withLock { table in table[userId] ?? table.values.first { $0.id == userId } }
        var saved = record
        if let known, known.key != userId { saved.directory = known.key }
        try records.save(saved)
        let user = users.withLock { table -> User in
            if let existing = table[saved.key] { return existing }
            let user = User(app: self, record: saved)
            table[saved.key] = user
            return user
        }
        user.update(saved)
        try records.setCurrentUserId(user.key)
        current.withLock { $0 = user.key }
        user.session.start()
        return user
    }

    /// Adds a user made on the device and makes it the current user.
    func adopt(_ user: User) {
        users.withLock { $0[user.key] = user }
        try? records.setCurrentUserId(user.key)
        current.withLock { $0 = user.key }
    }

    static func directoryName(_ id: String) -> String {
        String(
            id.unicodeScalars.map { scalar in
                (scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))) || scalar == "-" || scalar == "_"
                    ? Character(scalar) : "_"
            })
    }

    func forget(_ user: User) {
        users.withLock { $0[user.key] = nil }
        if current.withLock({ $0 }) == user.key {
            current.withLock { $0 = nil }
            try? records.setCurrentUserId(nil)
        }
    }

    // MARK: - HTTP

    func url(_ path: String) -> URL {
        configuration.baseURL.appendingPathComponent(path)
    }

    /// Sends an auth request with a protocol body (IngestCore/Protocol);
    /// transport failures become ``AppError/Code/network``.
    func request(
        _ method: String, _ path: String, body: (any ProtocolBody)? = nil,
        bearer: String? = nil
    ) async throws(AppError) -> TransportResponse {
        var headers = ["Accept": "application/json"]
        var data: Data?
        if let body {
            data = Data(body.jsonBody)
            headers["Content-Type"] = "application/json"
        }
        if let bearer { headers["Authorization"] = "Bearer \(bearer)" }
        let request = TransportRequest(
            method: method, url: url(path), headers: headers, body: data,
            timeout: configuration.requestTimeout)
        do {
            return try await transport.send(request)
        } catch {
            throw AppError(
                .network,
                "cannot reach the server at \(configuration.baseURL.absoluteString): \(error); check that it runs and App.Configuration.baseURL",
                underlyingError: error)
        }
    }

    /// Decodes a successful auth answer; `missing` is the message when the
    /// answer is JSON but lacks what the protocol defines.
    func decode<Answer: ProtocolBody>(
        _ type: Answer.Type, _ response: TransportResponse,
        missing: String
    ) throws(AppError) -> Answer {
        do {
            return try Answer(jsonBody: response.body)
        } catch  where error.code == .invalidJSON || error.code == .notAnObject {
            throw AppError(.invalidResponse, "the server's answer is not a JSON object", httpStatus: response.status)
        } catch {
            throw AppError(.invalidResponse, missing, httpStatus: response.status)
        }
    }

    /// The error for a failed auth request, by status and `error_code`.
    func authError(_ response: TransportResponse, action: String) -> AppError {
        let server = response.serverError
        let detail = server.map { $0.message.isEmpty ? "" : ": \($0.message)" } ?? ""
        let code: AppError.Code
        switch (response.status, server?.code ?? "") {
        case (401, "invalid_token"), (401, "expired_token"): code = .invalidSession
        case (401, _): code = .invalidCredentials
        case (403, _), (404, _): code = .appOrProviderUnavailable
        case (409, _): code = .alreadyExists
        case (429, _): code = .tooManyRequests
        case (400..<500, _): code = .badRequest
        case (500..<600, _): code = .serverError
        default: code = .invalidResponse
        }
        return AppError(
            code, "cannot \(action) (HTTP \(response.status))\(detail)", httpStatus: response.status,
            serverCode: server?.code)
    }
}
