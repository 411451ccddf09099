import Foundation

extension App.Configuration {
    /// Which built-in HTTP transport an ``App`` uses when
    /// ``App/Configuration/transport`` is `nil`.
    ///
    /// ```swift
    /// var configuration = App.Configuration()
    /// configuration.transportKind = .urlSession   // force URLSession, even for http://
    /// ```
    public enum TransportKind: String, Sendable {
        /// ``HTTPClientTransport`` (plain sockets) for `http://` base URLs,
        /// ``URLSessionTransport`` for `https://` and anything else.
        case automatic
        /// Always ``HTTPClientTransport``. It speaks plain `http` only: with
        /// an `https://` base URL every request fails with
        /// ``TransportError/Code/unsupportedURL``.
        case sockets
        /// Always ``URLSessionTransport`` (libcurl under FoundationNetworking on Linux).
        case urlSession
    }

    /// The transport this configuration selects: ``transport`` if set, else
    /// the one ``transportKind`` picks for ``baseURL``, with
    /// ``SyncSession/Configuration/maxUploadsInFlight`` + 1 connections (the
    /// uploads plus an auth request).
    func makeTransport() -> any SyncTransport {
        if let transport { return transport }
        let connections = max(1, sync.maxUploadsInFlight + 1)
        let plainHTTP = baseURL.scheme?.lowercased() == "http"
        let sockets = transportKind == .sockets || (transportKind == .automatic && plainHTTP)
        if sockets {
            return HTTPClientTransport(
                configuration: .init(
                    maxIdleConnectionsPerHost: connections,
                    connectTimeout: connectTimeout))
        }
        return URLSessionTransport(maxConnectionsPerHost: connections)
    }
}
