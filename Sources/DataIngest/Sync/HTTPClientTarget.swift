import Foundation

/// Where one request goes: parsed once from the request's URL.
struct HTTPClientTarget {
    /// The host to resolve, without the brackets of an IPv6 literal.
    var host: String
    var port: Int
    /// The `Host` header: brackets around an IPv6 literal, the port unless 80.
    var hostHeader: String
    /// The path and query, percent-encoded, as sent in the request line.
    var requestTarget: String
    /// The pool key.
    var key: String

    init(_ url: URL) throws(TransportError) {
        guard url.scheme?.lowercased() == "http" else {
            throw TransportError(
                .unsupportedURL,
                "\(url.absoluteString): the socket transport speaks plain http only; use URLSessionTransport (App.Configuration.transportKind = .urlSession) for https"
            )
        }
        guard var host = url.host, !host.isEmpty else {
            throw TransportError(.unsupportedURL, "\(url.absoluteString) has no host")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host
        port = url.port ?? 80
        let literal = host.contains(":") ? "[\(host)]" : host
        hostHeader = port == 80 ? literal : "\(literal):\(port)"
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        requestTarget = target
        key = "\(literal):\(port)"
    }
}
