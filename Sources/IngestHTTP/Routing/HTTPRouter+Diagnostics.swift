#if canImport(Glibc)
import Glibc
#endif

extension HTTPRouter {
    /// Registers `GET /healthz` (or `GET path`), answering `{"status":"ok"}`
    /// while the server runs (for load balancers and process supervisors).
    public mutating func addHealthRoute(at path: String = "/healthz") {
        get(path) { _ in .json(#"{"status":"ok"}"#) }
    }

    /// Registers diagnostic routes under `/_test/` used by the server's
    /// process tests and for checking a deployment by hand (`ingest-server
    /// --enable-test-routes`). Never enable them in production: they echo
    /// what they receive and can hold a worker thread for up to 10 s.
    ///
    /// - `POST|PUT /_test/echo`: answers with the request body; headers
    ///   `X-Echo-Method`, `X-Echo-Path`, `X-Echo-Query`, `X-Echo-Body-Bytes`.
    /// - `GET /_test/headers`: the request's header fields, one `name: value`
    ///   line each, in order.
    /// - `GET /_test/sleep?ms=N`: waits N milliseconds (at most 10000) on a
    ///   worker thread, then answers `slept N`.
    public mutating func addDiagnosticRoutes() {
        let echo: HTTPHandler = { request in
            var response = HTTPResponse(status: .ok, headers: ["Content-Type": "application/octet-stream"], body: request.body)
            response.headers.add(name: "X-Echo-Method", value: request.method)
            response.headers.add(name: "X-Echo-Path", value: request.path)
            response.headers.add(name: "X-Echo-Query", value: request.query ?? "")
            response.headers.add(name: "X-Echo-Body-Bytes", value: String(request.body.count))
            return response
        }
        add("POST", "/_test/echo", echo)
        add("PUT", "/_test/echo", echo)
        get("/_test/headers") { request in
            .text(request.headers.map { "\($0.name): \($0.value)\n" }.joined())
        }
        get("/_test/sleep") { request in
            let ms = min(10_000, max(0, Int(request.queryParameter("ms") ?? "") ?? 0))
            usleep(useconds_t(ms) * 1000)
            return .text("slept \(ms)\n")
        }
    }
}
