import Foundation
import IngestCore
import IngestSupport

/// Authentication for all configured apps: logins with each provider,
/// session refresh and logout, email/password registration, API key
/// creation, and access token verification for uploads.
///
/// Independent of HTTP: a front door passes the app id, the provider name
/// and the request body (or a decoded ``LoginRequest``), gets the protocol's
/// answers (``LoginAnswer``, ``SessionAnswer``) or an ``AuthError`` with its
/// code and ``AuthError/kind``; Routes/AuthRoutes.swift maps them to HTTP.
///
/// ```swift
/// let auth = try AuthService(configuration: config)
/// let login = try auth.login(appId: appId, provider: "anon-user", body: Array(#"{}"#.utf8))
/// let claims = try auth.verifyAccessToken(login.accessToken, appId: appId)
/// let session = try auth.refresh(refreshToken: login.refreshToken)
/// try auth.logout(refreshToken: login.refreshToken)
/// ```
package final class AuthService: Sendable {
    /// The state database (users, refresh tokens, API keys, generated secrets).
    package let store: StateStore
    private let apps: [String: AppAuth]
    private let clock: @Sendable () -> Date
    /// Access tokens that passed ``verifyAccessToken(_:appId:)``, with their claims.
    private let verifiedTokens = LockedBox<[String: AccessClaims]>([:])
    /// The most tokens kept in `verifiedTokens`.
    static let verifiedTokenCacheSize = 4096

    /// Per-app auth state resolved at start-up.
    private struct AppAuth: Sendable {
        var configuration: AppConfiguration
        var codec: AccessTokenCodec
        var hasher: PasswordHasher
        /// A well-formed hash with the app's parameters that matches no
        /// password: unknown emails cost the same KDF time as known ones.
        var decoyHash: String
        /// Failed password logins per email.
        var throttle: LoginThrottle
    }

    /// Bytes of randomness in refresh tokens and API keys.
    static let tokenBytes = 32
    /// Prefix of API keys, so that secret scanners and people can recognize them.
    package static let apiKeyPrefix = "dik_"

    /// Opens the state database under `configuration.stateDirectory` and
    /// resolves each app's signing secret (configured, or generated once and
    /// kept in the state database).
    ///
    /// - Parameters:
    ///   - store: an already open state store; default opens `configuration.stateDatabasePath`.
    ///   - clock: the time source (a seam for expiry tests). Default `Date.init`.
    /// - Throws: ``StorageError`` if the state database cannot be opened.
    package init(
        configuration: ServerConfiguration, store: StateStore? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(StorageError) {
        let openStore: StateStore
        if let store {
            openStore = store
        } else if let shared = configuration.sharedStatePostgres {
            openStore = try StateStore(postgres: shared)
        } else {
            openStore = try StateStore(path: configuration.stateDatabasePath)
        }
        let now = Int64(clock().timeIntervalSince1970)
        var apps: [String: AppAuth] = [:]
        for app in configuration.apps {
            let secret: [UInt8]
            if let configured = app.signingSecret {
                secret = configured
            } else {
                secret = try openStore.appSecret(appId: app.id, generatingBytes: 48, now: now)
            }
            let parameters = app.auth.userPassword?.passwordHashing ?? .init()
            let decoy =
                "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$"
                + Base64URL.encode([UInt8](repeating: 0, count: 16)) + "$" + Base64URL.encode([UInt8](repeating: 0, count: 32))
            apps[app.id] = AppAuth(
                configuration: app,
                codec: AccessTokenCodec(appId: app.id, secret: secret, lifetimeSeconds: app.accessTokenLifetimeSeconds),
                hasher: PasswordHasher(parameters: parameters), decoyHash: decoy,
                throttle: LoginThrottle(
                    maxFailures: app.auth.userPassword?.maxFailedLogins ?? 10,
                    lockoutSeconds: app.auth.userPassword?.lockoutSeconds ?? 900))
        }
        // Forget refresh tokens that expired or were revoked more than a week ago.
        try openStore.purgeRefreshTokens(before: now - 7 * 86_400)
        self.store = openStore
        self.apps = apps
        self.clock = clock
    }

    private var now: Int64 { Int64(clock().timeIntervalSince1970) }

    private func app(_ appId: String) throws(AuthError) -> AppAuth {
        guard let app = apps[appId] else {
            throw AuthError(.unknownApp, "no app with id \"\(appId)\" is configured on this server", appId: appId)
        }
        return app
    }

    // MARK: - Login

    /// Logs in with `provider` (the URL segment: `anon-user`, `local-userpass`,
    /// `api-key`, `custom-token`) and the JSON request `body` (a
    /// ``LoginRequest``; an empty body counts as `{}`):
    ///
    /// - `anon-user`: `{}`;
    /// - `local-userpass`: `{"username": "<email>", "password": "…"}` (`email` is accepted for `username`);
    /// - `api-key`: `{"key": "…"}`;
    /// - `custom-token`: `{"token": "<JWT>"}`.
    ///
    /// Any body may carry `"options": {"device": {"deviceId": "<24 hex>"}}`
    /// to keep a device id across logins; otherwise a new one is generated.
    /// The body is parsed strictly (duplicate keys are refused) after the app
    /// and the provider are checked.
    ///
    /// - Throws: ``AuthError``: `.notFound` unknown app or provider,
    ///   `.forbidden` provider disabled or user disabled, `.invalidRequest`
    ///   malformed body, `.unauthenticated` bad credentials, `.overloaded` too
    ///   many failed password logins for this email (see ``AuthError/retryAfterSeconds``).
    package func login(appId: String, provider providerName: String, body: [UInt8]) throws(AuthError) -> LoginAnswer {
        let (app, provider) = try enabledProvider(appId: appId, providerName)
        let json = try parseBody(body, appId: appId)
        let request: LoginRequest
        do {
            request = try LoginRequest(json: json)
        } catch {
            throw AuthError(.badRequest, "the request body must be a JSON object", appId: appId)
        }
        return try login(app: app, provider: provider, request: request)
    }

    /// Logs in with `provider` and an already decoded ``LoginRequest`` (for
    /// a front door that carries the credentials in its own messages).
    ///
    /// ```swift
    /// let answer = try auth.login(appId: appId, provider: "custom-token", request: LoginRequest(token: jwt))
    /// ```
    ///
    /// - Throws: ``AuthError``, as ``login(appId:provider:body:)``.
    package func login(appId: String, provider providerName: String, request: LoginRequest) throws(AuthError) -> LoginAnswer {
        let (app, provider) = try enabledProvider(appId: appId, providerName)
        return try login(app: app, provider: provider, request: request)
    }

    private func enabledProvider(appId: String, _ providerName: String) throws(AuthError) -> (AppAuth, AuthProvider) {
        let app = try app(appId)
        guard let provider = AuthProvider(rawValue: providerName) else {
            throw AuthError(
                .unknownProvider,
                "unknown auth provider \"\(providerName)\"; use "
                    + AuthProvider.allCases.map(\.rawValue).joined(separator: ", "), appId: appId)
        }
        guard app.configuration.auth.isEnabled(provider) else {
            throw AuthError(
                .providerDisabled, "the \(provider.rawValue) provider is not enabled for app \(appId)",
                appId: appId)
        }
        return (app, provider)
    }

    private func login(app: AppAuth, provider: AuthProvider, request: LoginRequest) throws(AuthError) -> LoginAnswer {
        let appId = app.configuration.id
        let now = self.now
        let user: UserRecord
        switch provider {
        case .anonymous:
            user = try storage(appId) { () throws(StorageError) in
                try store.createUser(appId: appId, provider: .anonymous, identity: nil, passwordHash: nil, now: now)
            }
        case .userPassword:
            guard let email = request.username, let password = request.password
            else { throw AuthError(.badRequest, "send {\"username\": \"<email>\", \"password\": \"…\"}", appId: appId) }
            user = try loginWithPassword(app: app, email: email, password: password)
        case .apiKey:
            guard let key = request.key else {
                throw AuthError(.badRequest, "send {\"key\": \"<API key>\"}", appId: appId)
            }
            user = try loginWithAPIKey(app: app, key: key)
        case .customToken:
            guard let token = request.token, let settings = app.configuration.auth.customToken else {
                throw AuthError(.badRequest, "send {\"token\": \"<JWT>\"}", appId: appId)
            }
            let subject: String
            do {
                subject = try CustomJWTVerifier(settings: settings).verify(token, now: now)
            } catch {
                throw AuthError(error.code, error.message, appId: appId)
            }
            user = try findOrCreate(appId: appId, provider: .customToken, identity: subject, now: now)
        }
        guard !user.isDisabled else {
            throw AuthError(.userDisabled, "this user is disabled", appId: appId)
        }
        var deviceId = ObjectId.generate().hex
        if let requested = request.deviceId, let parsed = try? ObjectId(hex: requested) {
            deviceId = parsed.hex
        }
        let refreshToken = try issueRefreshToken(app: app, userId: user.id, deviceId: deviceId, now: now)
        return LoginAnswer(
            accessToken: app.codec.issue(userId: user.id, deviceId: deviceId, now: now),
            refreshToken: refreshToken, userId: user.id, deviceId: deviceId)
    }

    private func loginWithPassword(app: AppAuth, email: String, password: String) throws(AuthError) -> UserRecord {
        let appId = app.configuration.id
        let identity = AuthService.normalizedEmail(email)
        let now = self.now
        try app.throttle.check(identity, now: now, appId: appId)
        let found = try storage(appId) { () throws(StorageError) in
            try store.user(appId: appId, provider: .userPassword, identity: identity)
        }
        let matches: Bool
        do {
            matches = try app.hasher.verify(password, against: found?.passwordHash ?? app.decoyHash)
        } catch {
            throw AuthError(.internalError, "cannot check the password: \(error.message)", appId: appId)
        }
        guard let found, matches else {
            app.throttle.recordFailure(identity, now: now)
            throw AuthError(.invalidCredentials, "invalid email or password", appId: appId)
        }
        app.throttle.recordSuccess(identity)
        return found
    }

    private func loginWithAPIKey(app: AppAuth, key: String) throws(AuthError) -> UserRecord {
        let appId = app.configuration.id
        let record = try storage(appId) { () throws(StorageError) in try store.apiKey(hash: Crypto.sha256(Array(key.utf8))) }
        // A key of another app is reported like an unknown key: it must not reveal other apps' keys.
        guard let record, record.appId == appId, record.revokedAt == nil,
            let user = try storage(appId, { () throws(StorageError) in try store.user(id: record.userId) })
        else { throw AuthError(.invalidCredentials, "invalid or revoked API key", appId: appId) }
        return user
    }

    private func findOrCreate(appId: String, provider: AuthProvider, identity: String, now: Int64) throws(AuthError) -> UserRecord {
        try storage(appId) { () throws(StorageError) in
            if let existing = try store.user(appId: appId, provider: provider, identity: identity) { return existing }
            do throws(StorageError) {
                return try store.createUser(appId: appId, provider: provider, identity: identity, passwordHash: nil, now: now)
            } catch  where error.code == .constraint {
                // A concurrent first login created it between the lookup and the insert.
                if let existing = try store.user(appId: appId, provider: provider, identity: identity) { return existing }
                throw error
            }
        }
    }

    /// A new refresh token, stored by its hash. It is shaped as a JWT
    /// (HS256 with the app's secret; `typ` "refresh", `sub`, `aud`, `iat`,
    /// `exp` and 32 random bytes in `jti`) because Realm clients read `exp`
    /// and `iat` from the payload of their refresh token; the server itself
    /// only looks the whole token up by its hash.
    private func issueRefreshToken(app: AppAuth, userId: String, deviceId: String, now: Int64) throws(AuthError) -> String {
        let expiresAt = now + app.configuration.refreshTokenLifetimeSeconds
        let token = JWT.signHS256(
            claims: .object([
                .init("iss", .string(AccessTokenCodec.issuer)),
                .init("sub", .string(userId)),
                .init("aud", .string(app.configuration.id)),
                .init("typ", .string("refresh")),
                .init("jti", .string(try randomToken(appId: app.configuration.id))),
                .init("iat", .integer(now)),
                .init("exp", .integer(expiresAt)),
            ]), secret: app.codec.secret)
        let record = RefreshTokenRecord(
            tokenHash: Crypto.sha256(Array(token.utf8)), appId: app.configuration.id,
            userId: userId, deviceId: deviceId, createdAt: now,
            expiresAt: expiresAt, revokedAt: nil)
        try storage(app.configuration.id) { () throws(StorageError) in try store.insertRefreshToken(record) }
        return token
    }

    private func randomToken(appId: String) throws(AuthError) -> String {
        do {
            return Base64URL.encode(try Crypto.randomBytes(AuthService.tokenBytes))
        } catch {
            throw AuthError(.internalError, "cannot generate a token: \(error.message)", appId: appId)
        }
    }

    // MARK: - Sessions

    /// Issues a new access token for a valid refresh token
    /// (`POST /api/client/v2.0/auth/session` with `Authorization: Bearer <refresh token>`).
    /// When the app rotates refresh tokens, the old one is revoked and the
    /// response carries its replacement.
    ///
    /// A rotated token stays usable until its replacement is first used: the
    /// replacement is derived from it (HMAC with the app's signing secret), so
    /// presenting it again returns the same replacement. A client that lost
    /// the answer (killed before it saved the new token, or its disk was full)
    /// is not locked out with its data still on the device; once the
    /// replacement has been used (or revoked), the old token is refused.
    ///
    /// - Throws: ``AuthError`` 401 `.invalidToken` (unknown, revoked, app no
    ///   longer configured) or `.expiredToken`; 403 `.userDisabled`.
    package func refresh(refreshToken: String) throws(AuthError) -> SessionAnswer {
        let hash = Crypto.sha256(Array(refreshToken.utf8))
        let now = self.now
        let record = try storage(nil) { () throws(StorageError) in try store.refreshToken(hash: hash) }
        guard let record, let app = apps[record.appId] else {
            throw AuthError(.invalidToken, "the refresh token is unknown or revoked; log in again")
        }
        guard record.revokedAt == nil else {
            return try refreshWithRotatedToken(refreshToken, record: record, app: app, now: now)
        }
        guard now <= record.expiresAt else {
            throw AuthError(.expiredToken, "the refresh token expired; log in again", appId: record.appId)
        }
        let user = try storage(record.appId) { () throws(StorageError) in try store.user(id: record.userId) }
        guard let user, !user.isDisabled else {
            throw AuthError(.userDisabled, "this user is disabled", appId: record.appId)
        }
        let accessToken = app.codec.issue(userId: record.userId, deviceId: record.deviceId, now: now)
        guard app.configuration.rotateRefreshTokens else { return SessionAnswer(accessToken: accessToken) }
        let replacement = Self.replacementToken(for: refreshToken, app: app)
        let newRecord = RefreshTokenRecord(
            tokenHash: Crypto.sha256(Array(replacement.utf8)), appId: record.appId,
            userId: record.userId, deviceId: record.deviceId, createdAt: now,
            expiresAt: now + app.configuration.refreshTokenLifetimeSeconds, revokedAt: nil)
        let rotated = try storage(record.appId) { () throws(StorageError) in
            try store.rotateRefreshToken(oldHash: hash, replacement: newRecord, now: now)
        }
        guard rotated else {
            // A concurrent refresh rotated it first: answer as it did.
            return try refreshWithRotatedToken(refreshToken, record: record, app: app, now: now)
        }
        return SessionAnswer(accessToken: accessToken, refreshToken: replacement)
    }

    /// The replacement of `refreshToken` when it is rotated: derived from it,
    /// so the same old token always maps to the same replacement.
    private static func replacementToken(for refreshToken: String, app: AppAuth) -> String {
        Base64URL.encode(Crypto.hmacSHA256(key: app.codec.secret, message: Array(("refresh-rotation\u{0}" + refreshToken).utf8)))
    }

    /// A revoked refresh token: accepted again only if it was rotated and its
    /// replacement was never used (nor revoked, nor expired); the answer
    /// carries that same replacement.
    private func refreshWithRotatedToken(
        _ refreshToken: String, record: RefreshTokenRecord, app: AppAuth,
        now: Int64
    ) throws(AuthError) -> SessionAnswer {
        let refused = AuthError(.invalidToken, "the refresh token is unknown or revoked; log in again", appId: record.appId)
        guard app.configuration.rotateRefreshTokens else { throw refused }
        let replacement = Self.replacementToken(for: refreshToken, app: app)
        let replacementHash = Crypto.sha256(Array(replacement.utf8))
        let next = try storage(record.appId) { () throws(StorageError) in try store.refreshToken(hash: replacementHash) }
        guard let next, next.revokedAt == nil, next.userId == record.userId, now <= next.expiresAt else { throw refused }
        let user = try storage(record.appId) { () throws(StorageError) in try store.user(id: record.userId) }
        guard let user, !user.isDisabled else {
            throw AuthError(.userDisabled, "this user is disabled", appId: record.appId)
        }
        return SessionAnswer(
            accessToken: app.codec.issue(userId: record.userId, deviceId: record.deviceId, now: now),
            refreshToken: replacement)
    }

    /// Revokes a refresh token (`DELETE /api/client/v2.0/auth/session`).
    /// Revoking an already revoked token succeeds (logout is idempotent);
    /// access tokens already issued stay valid until they expire.
    ///
    /// - Throws: ``AuthError`` 401 `.invalidToken` if the token is unknown.
    package func logout(refreshToken: String) throws(AuthError) {
        let hash = Crypto.sha256(Array(refreshToken.utf8))
        let now = self.now
        let record = try storage(nil) { () throws(StorageError) in try store.refreshToken(hash: hash) }
        guard record != nil else { throw AuthError(.invalidToken, "the refresh token is unknown") }
        try storage(record?.appId) { () throws(StorageError) in _ = try store.revokeRefreshToken(hash: hash, now: now) }
    }

    /// Verifies an access token for `appId` (the upload endpoint's check).
    ///
    /// - Throws: ``AuthError`` 404 unknown app; 401 `.invalidToken` (also for
    ///   a forged token, whatever app it names) or `.expiredToken` (refresh and
    ///   retry); 403 `.wrongApp` for a token another app of this server signed.
    package func verifyAccessToken(_ token: String, appId: String) throws(AuthError) -> AccessClaims {
        let app = try app(appId)
        let now = self.now
        // The signature and the claims depend on the token alone (and the app's
        // fixed secret): a token verified before needs only its times checked
        // again. Uploads send the same token for many segments, and parsing and
        // HMAC-checking it cost as much as storing dozens of objects.
        if let claims = verifiedTokens.withLock({ $0[token] }), claims.appId == appId,
            now <= claims.expiresAt.saturatingAdd(app.codec.leewaySeconds),
            claims.issuedAt <= now.saturatingAdd(app.codec.leewaySeconds)
        {
            return claims
        }
        let claims: AccessClaims
        do {
            claims = try app.codec.verify(token, now: now)
        } catch  where error.code == .invalidToken {
            throw signedForAnotherApp(token, appId: appId) ?? error
        }
        verifiedTokens.withLock { cache in
            // Bounded: forgetting everything now and then costs one verification per token.
            if cache.count >= Self.verifiedTokenCacheSize { cache.removeAll(keepingCapacity: true) }
            cache[token] = claims
        }
        return claims
    }

    /// `wrong_app` for a token that another app of this server really signed
    /// (its own secret verifies it; 403, permanent for `appId`), nil for any
    /// other token: a signature no app made is `invalid_token` whatever the
    /// token's `aud` says (the signature is checked before the scope).
    private func signedForAnotherApp(_ token: String, appId: String) -> AuthError? {
        guard let jwt = try? JWT(parsing: token), jwt.algorithm == "HS256",
            let audience = jwt.claims["aud"]?.stringValue, audience != appId,
            let other = apps[audience], jwt.hasValidHS256Signature(secret: other.codec.secret)
        else { return nil }
        return AuthError(.wrongApp, "the access token was issued for app \(audience), not \(appId)", appId: appId)
    }

    // MARK: - Registration and API keys

    /// Registers an email/password user (`POST …/auth/providers/local-userpass/register`).
    /// The user can log in at once (no confirmation email). Returns the user id.
    ///
    /// - Throws: ``AuthError`` 400 malformed email or `.passwordPolicy`;
    ///   403 provider disabled; 404 unknown app; 409 `.alreadyExists`.
    @discardableResult
    package func register(appId: String, email: String, password: String) throws(AuthError) -> String {
        let app = try app(appId)
        guard let settings = app.configuration.auth.userPassword else {
            throw AuthError(.providerDisabled, "the local-userpass provider is not enabled for app \(appId)", appId: appId)
        }
        let identity = AuthService.normalizedEmail(email)
        guard AuthService.isPlausibleEmail(identity) else {
            throw AuthError(.badRequest, "\"\(email)\" is not an email address", appId: appId)
        }
        let length = password.count
        guard length >= settings.minPasswordLength, password.utf8.count <= 1024 else {
            throw AuthError(
                .passwordPolicy, "the password must have \(settings.minPasswordLength) to 1024 characters",
                appId: appId)
        }
        let hash: String
        do {
            hash = try app.hasher.hash(password)
        } catch {
            throw AuthError(.internalError, "cannot hash the password: \(error.message)", appId: appId)
        }
        let now = self.now
        do {
            return try store.createUser(
                appId: appId, provider: .userPassword, identity: identity, passwordHash: hash,
                now: now
            ).id
        } catch  where error.code == .constraint {
            throw AuthError(.alreadyExists, "a user with this email already exists", appId: appId)
        } catch {
            throw AuthError(.internalError, "cannot store the user: \(error.message)", appId: appId)
        }
    }

    /// Registers from a JSON body (a ``RegisterRequest``: `{"email": "…", "password": "…"}`).
    @discardableResult
    package func register(appId: String, body: [UInt8]) throws(AuthError) -> String {
        _ = try app(appId)
        let json = try parseBody(body, appId: appId)
        let request: RegisterRequest
        do {
            request = try RegisterRequest(json: json)
        } catch {
            throw AuthError(.badRequest, "send {\"email\": \"…\", \"password\": \"…\"}", appId: appId)
        }
        return try register(appId: appId, email: request.email, password: request.password)
    }

    /// Creates an API key named `name` for `appId` (the admin subcommand
    /// `ingest-server apikey create --app ID --name N`). The returned key is
    /// the only copy: the server stores its SHA-256 hash.
    ///
    /// - Throws: ``AuthError`` 404 unknown app; 400 empty or overlong name;
    ///   409 a key with this name exists (revoked keys keep their name).
    package func createAPIKey(appId: String, name: String) throws(AuthError) -> CreatedAPIKey {
        _ = try app(appId)
        guard (1...100).contains(name.utf8.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw AuthError(.badRequest, "the API key name must have 1 to 100 bytes and no control characters", appId: appId)
        }
        let key = AuthService.apiKeyPrefix + (try randomToken(appId: appId))
        do {
            let record = try store.insertAPIKey(appId: appId, name: name, keyHash: Crypto.sha256(Array(key.utf8)), now: now)
            return CreatedAPIKey(key: key, record: record)
        } catch  where error.code == .constraint {
            throw AuthError(.alreadyExists, "app \(appId) already has an API key named \"\(name)\"", appId: appId)
        } catch {
            throw AuthError(.internalError, "cannot store the API key: \(error.message)", appId: appId)
        }
    }

    /// Revokes the API key named `name`, and the sessions it started.
    /// Returns whether a valid key was revoked.
    @discardableResult
    package func revokeAPIKey(appId: String, name: String) throws(AuthError) -> Bool {
        _ = try app(appId)
        let now = self.now
        return try storage(appId) { () throws(StorageError) in try store.revokeAPIKey(appId: appId, name: name, now: now) }
    }

    // MARK: - Helpers

    /// The body as a JSON object: empty (or only whitespace) is `{}`; at
    /// most 64 KiB, nested at most 16 deep, no duplicate keys.
    private func parseBody(_ body: [UInt8], appId: String) throws(AuthError) -> JSONValue {
        if body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return .object([]) }
        guard body.count <= 64 * 1024 else { throw AuthError(.badRequest, "the request body is too large", appId: appId) }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: body, options: .strict(maxDepth: 16))
        } catch {
            throw AuthError(.badRequest, "the request body is not valid JSON: \(error.description)", appId: appId)
        }
        guard case .object = value else { throw AuthError(.badRequest, "the request body must be a JSON object", appId: appId) }
        return value
    }

    private func storage<T>(_ appId: String?, _ body: () throws(StorageError) -> T) throws(AuthError) -> T {
        do {
            return try body()
        } catch {
            throw AuthError(.internalError, "state database failure: \(error.message)", appId: appId)
        }
    }

    static func normalizedEmail(_ email: String) -> String {
        email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    static func isPlausibleEmail(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !parts[1].hasPrefix(".")
            && !parts[1].hasSuffix(".") && email.utf8.count <= 254 && !email.contains(where: \.isWhitespace)
    }
}
