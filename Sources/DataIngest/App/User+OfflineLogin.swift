import Foundation
import IngestCore

// A first start without a server: `app.login(credentials: .anonymous)` that
// cannot reach the server (no answer, or a 5xx) creates the anonymous user
// locally, so the app records at once; the data stays on disk, and the
// user's session logs it in when the server answers, then uploads.

extension App {
    /// An anonymous user created without the server: a local id
    /// (`local-<24 hex>`), a device id chosen here and kept at the real login,
    /// no tokens. Its session starts at once and logs it in when it can.
    func startOffline(deviceId: String?) throws(AppError) -> User {
        let key = "local-" + ObjectId.generate().hex
        let record = UserRecord(
            id: key, deviceId: deviceId ?? ObjectId.generate().hex, provider: Credentials.anonymous.provider,
            accessToken: nil, refreshToken: nil, state: .loggedIn,
            loggedInAtMillis: Int64(Date().timeIntervalSince1970 * 1000), directory: key, awaitingLogin: true)
        try records.save(record)
        let user = User(app: self, record: record)
        adopt(user)
        user.session.start()
        return user
    }
}

extension User {
    /// Whether the user was created offline and has not logged in yet.
    var isAwaitingLogin: Bool { record.awaitingLogin == true }

    /// Logs a user created offline in anonymously (keeping its device id) and
    /// returns the access token. Concurrent callers share one request.
    ///
    /// - Throws: ``AppError`` `.network` or `.serverError` while the server
    ///   cannot be reached (retried later), `.invalidSession` if it refuses
    ///   (the anonymous provider disabled, an unknown app: the data waits on
    ///   disk and is reported).
    func completeOfflineLogin() async throws(AppError) -> String {
        do {
            return try await gate.run(on: app.syncExecutor) { [self] in
                let current = record
                if current.awaitingLogin != true, let token = current.accessToken { return token }
                let response = try await app.request(
                    "POST", ProtocolRoutes.loginPath(appId: app.id, provider: provider),
                    body: Credentials.anonymous.loginRequest(deviceId: current.deviceId))
                guard response.status == 200 else {
                    let error = app.authError(response, action: "log in user \(id), created while the server could not be reached,")
                    if error.code == .serverError { throw error }
                    throw AppError(.invalidSession, error.message, httpStatus: error.httpStatus, serverCode: error.serverCode)
                }
                let login = try app.decode(
                    LoginAnswer.self, response,
                    missing: "the login answer lacks access_token, refresh_token, user_id or device_id")
                let (access, refresh, userId, device) = (login.accessToken, login.refreshToken, login.userId, login.deviceId)
                try change { record in
                    record.directory = record.key
                    record.id = userId
                    record.deviceId = device
                    record.accessToken = access
                    record.refreshToken = refresh
                    record.awaitingLogin = nil
                }
                return access
            }
        } catch let error as AppError {
            throw error
        } catch {
            throw AppError(.network, "logging in user \(id) failed: \(error)", underlyingError: error)
        }
    }
}

extension App {
    /// ``request(_:_:body:bearer:)`` as a `Result`.
    func requestResult(_ method: String, _ path: String, body: (any ProtocolBody)?) async -> Result<TransportResponse, AppError> {
        do {
            return .success(try await request(method, path, body: body))
        } catch {
            return .failure(error)
        }
    }

    /// No answer, or a 5xx: the server cannot log anyone in now.
    static func serverUnreachable(_ answer: Result<TransportResponse, AppError>) -> Bool {
        switch answer {
        case .success(let response): (500..<600).contains(response.status)
        case .failure(let error): error.code == .network
        }
    }
}
