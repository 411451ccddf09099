/// An authentication or authorization failure: a stable code (the
/// `error_code` clients see) and a message, independent of the front door
/// that carried the request (Routes/AuthRoutes.swift maps ``kind`` to the
/// HTTP status).
///
/// ```swift
/// do { _ = try auth.verifyAccessToken(token, appId: appId) }
/// catch where error.kind == .unauthenticated { print("refresh the token: \(error.message)") }
/// ```
package struct AuthError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added; clients
    /// should treat unknown codes by their HTTP status.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }

        /// The request body or a parameter is malformed (400).
        package static let badRequest = Code(rawValue: "bad_request")
        /// The password does not meet the app's password policy (400).
        package static let passwordPolicy = Code(rawValue: "password_policy")
        /// The token is malformed, forged, revoked or of the wrong type (401).
        package static let invalidToken = Code(rawValue: "invalid_token")
        /// The token's lifetime is over; refresh the access token or log in again (401).
        package static let expiredToken = Code(rawValue: "expired_token")
        /// Wrong email/password, unknown or revoked API key, rejected custom JWT (401).
        package static let invalidCredentials = Code(rawValue: "invalid_credentials")
        /// The token belongs to another app (403).
        package static let wrongApp = Code(rawValue: "wrong_app")
        /// The auth provider is not enabled for this app (403).
        package static let providerDisabled = Code(rawValue: "provider_disabled")
        /// The user was disabled by an administrator (403).
        package static let userDisabled = Code(rawValue: "user_disabled")
        /// No app with this id is configured (404).
        package static let unknownApp = Code(rawValue: "unknown_app")
        /// The provider name in the URL is not one the server knows (404).
        package static let unknownProvider = Code(rawValue: "unknown_provider")
        /// A user with this email (or an API key with this name) exists (409).
        package static let alreadyExists = Code(rawValue: "already_exists")
        /// Too many failed attempts; retry after ``AuthError/retryAfterSeconds`` (429).
        package static let tooManyRequests = Code(rawValue: "too_many_requests")
        /// The server could not complete the operation (storage or crypto failure) (500).
        package static let internalError = Code(rawValue: "internal_error")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do; safe to return to the client.
    package var message: String
    /// The app the request was for, if known.
    package var appId: String?
    /// For `.tooManyRequests`: seconds until a retry can succeed (the `Retry-After` header).
    package var retryAfterSeconds: Int?

    package init(_ code: Code, _ message: String, appId: String? = nil) {
        self.code = code
        self.message = message
        self.appId = appId
    }

    /// What kind of failure this is, for any front door (the HTTP adapter
    /// answers 400, 401, 403, 404, 409, 429 or 500).
    package var kind: ServiceErrorKind {
        switch code {
        case .badRequest, .passwordPolicy: .invalidRequest
        case .invalidToken, .expiredToken, .invalidCredentials: .unauthenticated
        case .wrongApp, .providerDisabled, .userDisabled: .forbidden
        case .unknownApp, .unknownProvider: .notFound
        case .alreadyExists: .conflict
        case .tooManyRequests: .overloaded
        default: .failed
        }
    }

    package var description: String { "AuthError(\(code.rawValue), \(kind)): \(message)" }
}
