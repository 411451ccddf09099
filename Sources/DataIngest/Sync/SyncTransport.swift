import Foundation

/// Sends one HTTP request to the server. ``URLSessionTransport`` is the
/// default; tests wrap it to inject faults, and another transport can
/// replace it through ``App/Configuration/transport``.
///
/// ```swift
/// struct FailingFirst: SyncTransport {
///     let inner = URLSessionTransport()
///     func send(_ request: TransportRequest) async throws -> TransportResponse {
///         try await inner.send(request)
///     }
/// }
/// ```
public protocol SyncTransport: Sendable {
    /// Sends `request` and returns the server's answer, whatever its status.
    /// Throws only when no answer arrived (connection refused or reset,
    /// timeout); the session retries those with backoff.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// One HTTP request.
public struct TransportRequest: Sendable {
    /// `GET`, `POST`, `DELETE`.
    public var method: String
    /// The full URL.
    public var url: URL
    /// Header fields.
    public var headers: [String: String]
    /// The body, if any.
    public var body: Data?
    /// Seconds to wait for the answer.
    public var timeout: TimeInterval

    /// Creates a request.
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: TimeInterval = 60) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// One HTTP response.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// Creates a response; header names are lowercased.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
    }

    /// `Retry-After` in seconds, if present and numeric.
    public var retryAfterSeconds: Double? {
        headers["retry-after"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The server's `{"error", "error_code"}` body, if it has one.
    var serverError: (message: String, code: String)? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        return ((object["error"] as? String) ?? "", (object["error_code"] as? String) ?? "")
    }
}

/// A transport failure: no answer from the server.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What happened.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { "TransportError: \(message)" }
}
