/// A route handler. It runs on one of the server's worker threads, so it may
/// block (database writes); it never runs on the event loop.
public typealias HTTPHandler = @Sendable (HTTPRequest) throws -> HTTPResponse

/// A route handler for code that must `await` (actors). It runs as a task;
/// use ``HTTPHandler`` for blocking work such as database writes.
public typealias HTTPAsyncHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Maps a method and a path to a handler. Patterns are paths whose segments
/// are literals or `{name}` parameters; literal segments win over parameters
/// when several patterns match. A path that matches no pattern answers 404; a
/// path that matches only with other methods answers 405 with `Allow` (and
/// `OPTIONS` answers 204 with `Allow`). `HEAD` uses the `GET` route.
///
/// Build the router before creating the server; the server keeps a copy.
///
/// ```swift
/// var router = HTTPRouter()
/// router.get("/healthz") { _ in .text("ok\n") }
/// router.post("/api/client/v2.0/app/{appId}/auth/providers/{provider}/login") { request in
///     let appId = request.pathParameters["appId"]!   // present: the pattern matched
///     ...
/// }
/// ```
public struct HTTPRouter: Sendable {
    /// A registered route.
    public struct Route: Sendable {
        /// The method this route answers.
        public var method: String
        /// The pattern as registered, e.g. `/app/{appId}/ingest`.
        public var pattern: String
        let segments: [Segment]
        let handler: Handler
        /// The number of literal segments: more specific patterns win.
        let specificity: Int
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    enum Handler: Sendable {
        case blocking(HTTPHandler)
        case async(HTTPAsyncHandler)
        case upgrade(HTTPUpgradeHandler)
    }

    /// The result of looking up a request.
    enum Resolution {
        case matched(Route, parameters: [String: String])
        case notFound
        case methodNotAllowed(allowed: [String])
    }

    /// The routes in registration order.
    public private(set) var routes: [Route] = []

    /// Creates an empty router.
    public init() {}

    /// Registers a blocking handler for `method` and `pattern`.
    ///
    /// The pattern must start with `/`; a segment `{name}` matches any one
    /// non-empty segment and is passed in ``HTTPRequest/pathParameters``.
    /// Registering the same method and pattern twice replaces the handler.
    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping HTTPHandler) {
        add(method, pattern, .blocking(handler))
    }

    /// Registers a handler that may `await`, for `method` and `pattern`.
    public mutating func addAsync(_ method: String, _ pattern: String, _ handler: @escaping HTTPAsyncHandler) {
        add(method, pattern, .async(handler))
    }

    /// Registers a handler that may switch a `GET` request's connection to
    /// another protocol (a WebSocket endpoint): see ``HTTPUpgradeHandler``.
    /// Requests that do not ask for an upgrade (`Connection: Upgrade` and an
    /// `Upgrade` header, HTTP/1.1) get `426 Upgrade Required` without calling it.
    public mutating func upgrade(_ pattern: String, _ handler: @escaping HTTPUpgradeHandler) {
        add("GET", pattern, .upgrade(handler))
    }

    /// Registers a `GET` (and so `HEAD`) handler.
    public mutating func get(_ pattern: String, _ handler: @escaping HTTPHandler) { add("GET", pattern, handler) }
    /// Registers a `POST` handler.
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPHandler) { add("POST", pattern, handler) }
    /// Registers a `PUT` handler.
    public mutating func put(_ pattern: String, _ handler: @escaping HTTPHandler) { add("PUT", pattern, handler) }
    /// Registers a `DELETE` handler.
    public mutating func delete(_ pattern: String, _ handler: @escaping HTTPHandler) { add("DELETE", pattern, handler) }

    private mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        precondition(pattern.hasPrefix("/"), "A route pattern must start with `/`: \(pattern)")
        let segments: [Segment] = pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            if $0.hasPrefix("{") && $0.hasSuffix("}") && $0.count > 2 {
                return .parameter(String($0.dropFirst().dropLast()))
            }
            return .literal(String($0))
        }
        let specificity = segments.filter { if case .literal = $0 { true } else { false } }.count
        let route = Route(method: method, pattern: pattern, segments: segments, handler: handler, specificity: specificity)
        routes.removeAll { $0.method == method && $0.segments == segments }
        routes.append(route)
    }

    /// Finds the route for `method` and the (percent-encoded) `path`.
    func resolve(method: String, path: String) -> Resolution {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var best: (route: Route, parameters: [String: String])?
        var headFallback: (route: Route, parameters: [String: String])?
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            if route.method == method {
                if best == nil || route.specificity > best!.route.specificity { best = (route, parameters) }
            } else if method == "HEAD" && route.method == "GET" {
                if headFallback == nil || route.specificity > headFallback!.route.specificity {
                    headFallback = (route, parameters)
                }
            }
        }
        if let match = best ?? headFallback { return .matched(match.route, parameters: match.parameters) }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
        if !allowed.contains("OPTIONS") { allowed.append("OPTIONS") }
        return .methodNotAllowed(allowed: allowed)
    }

    private static func match(_ segments: [Segment], _ parts: ArraySlice<Substring>) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal):
                guard part == literal else { return nil }
            case .parameter(let name):
                guard !part.isEmpty, let value = percentDecode(part) else { return nil }
                parameters[name] = value
            }
        }
        return parameters
    }
}
