import Foundation

/// An error from ``App``, ``User`` or authentication: what happened, the
/// server's status and error code when there is one, and what to do.
///
/// ```swift
/// do { _ = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "wrong")) }
/// catch let error as AppError where error.code == .invalidCredentials { print("check the password") }
/// ```
public struct AppError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What went wrong, as an extensible code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let rawValue: String
        /// Creates a code with the given name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server could not be reached (connection refused, timeout); retry later.
        public static let network = Code("network")
        /// Wrong password, unknown or revoked API key, rejected JWT (401 `invalid_credentials`).
        public static let invalidCredentials = Code("invalidCredentials")
        /// The refresh token is unknown, revoked or expired: log in again.
        public static let invalidSession = Code("invalidSession")
        /// The app id is unknown to the server, or the provider is disabled (403/404).
        public static let appOrProviderUnavailable = Code("appOrProviderUnavailable")
        /// The email is already registered (409).
        public static let alreadyExists = Code("alreadyExists")
        /// The request was refused as malformed or against policy (400), e.g. a short password.
        public static let badRequest = Code("badRequest")
        /// Too many attempts (429); wait and retry.
        public static let tooManyRequests = Code("tooManyRequests")
        /// The server failed (5xx); retry later.
        public static let serverError = Code("serverError")
        /// The server's answer could not be understood.
        public static let invalidResponse = Code("invalidResponse")
        /// The user is logged out or removed.
        public static let userLoggedOut = Code("userLoggedOut")
        /// The metadata directory (users and tokens) could not be read or written.
        public static let metadata = Code("metadata")
        /// The user's segment store could not be opened or used.
        public static let store = Code("store")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The HTTP status, when the server answered.
    public var httpStatus: Int?
    /// The server's `error_code`, when it sent one.
    public var serverCode: String?
    /// The underlying error (a transport or file error).
    public var underlyingError: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, serverCode: String? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.serverCode = serverCode
        self.underlyingError = underlyingError
    }

    public var description: String {
        var text = "AppError(\(code)): \(message)"
        if let httpStatus { text += " [HTTP \(httpStatus)\(serverCode.map { " \($0)" } ?? "")]" }
        return text
    }

    public var errorDescription: String? { description }
}
