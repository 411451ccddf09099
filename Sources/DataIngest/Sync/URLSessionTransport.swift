import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport for `https://` base URLs (and for any URL with
/// ``App/Configuration/transportKind`` `.urlSession`): one `URLSession` with keep-alive connections
/// (libcurl reuses them on Linux), several requests in flight at once.
///
/// ```swift
/// var configuration = App.Configuration()
/// configuration.transport = URLSessionTransport(maxConnectionsPerHost: 8)
/// ```
public final class URLSessionTransport: SyncTransport {
    private let session: URLSession

    /// Creates a transport allowing `maxConnectionsPerHost` parallel
    /// connections. Default 4.
    public init(maxConnectionsPerHost: Int = 4) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = max(1, maxConnectionsPerHost)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            // Nothing listening is told apart: the session probes for the server's return (SyncSession+Reconnect).
            let refused = (error as? URLError)?.code == .cannotConnectToHost
            throw TransportError(
                refused ? .connectionRefused : .other, "\(request.method) \(request.url.path): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw TransportError("\(request.method) \(request.url.path): not an HTTP response")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }
}
