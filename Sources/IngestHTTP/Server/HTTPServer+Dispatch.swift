#if canImport(Glibc)
import Glibc
#endif
import Logging

extension HTTPServer {
    /// Routes a complete request: 404/405/OPTIONS are answered on the loop,
    /// matched routes run on the worker pool (async handlers as tasks whose jobs
    /// run on the same pool).
    func dispatch(_ request: HTTPRequest, keepAlive: Bool, on connection: HTTPConnection) {
        connection.inFlight = true
        connection.current = HTTPConnection.CurrentRequest(
            method: request.method, path: request.path, routePattern: nil, isHead: request.method == "HEAD",
            keepAlive: keepAlive, http10: request.version.minor == 0, started: now,
            requestBodyBytes: request.body.count)
        if request.target == "*" {
            // `OPTIONS *` asks about the server itself, not a resource.
            complete(connection, with: HTTPResponse(status: .noContent))
            return
        }
        switch router.resolve(method: request.method, path: request.path) {
        case .matched(let route, let parameters):
            var request = request
            request.pathParameters = parameters
            request.routePattern = route.pattern
            connection.current.routePattern = route.pattern
            let id = connection.id
            let routed = request
            switch route.handler {
            case .blocking(let handler):
                guard let pool else { return }
                pool.submit { [self] in
                    let response: HTTPResponse
                    do { response = try handler(routed) } catch { response = self.errorResponse(error, routed) }
                    self.post(Completion(connectionID: id, response: response))
                }
            case .async(let handler):
                guard let asyncExecutor else { return }
                Task(executorPreference: asyncExecutor) { [self] in
                    let response: HTTPResponse
                    do { response = try await handler(routed) } catch { response = self.errorResponse(error, routed) }
                    self.post(Completion(connectionID: id, response: response))
                }
            case .upgrade(let handler):
                dispatchUpgrade(routed, handler: handler, on: connection)
            }
        case .notFound:
            complete(
                connection,
                with: HTTPError(
                    .notFound, code: .notFound, "No route matches \(request.path)."
                ).httpResponse())
        case .methodNotAllowed(let allowed):
            let allow = allowed.joined(separator: ", ")
            if request.method == "OPTIONS" {
                complete(connection, with: HTTPResponse(status: .noContent, headers: ["Allow": allow]))
            } else {
                complete(
                    connection,
                    with: HTTPError(
                        .methodNotAllowed, code: .methodNotAllowed,
                        "\(request.method) is not allowed on \(request.path); allowed: \(allow).",
                        headers: ["Allow": allow]
                    ).httpResponse())
            }
        }
    }

    func errorResponse(_ error: Error, _ request: HTTPRequest) -> HTTPResponse {
        if let error = error as? HTTPResponseConvertibleError { return error.httpResponse() }
        logger.error("handler for \(request.method) \(request.path) failed: \(error)", metadata: ["route": "\(request.routePattern ?? "")"])
        return HTTPError(
            .internalServerError, code: .internalError,
            "The server failed while handling the request; see the server log."
        ).httpResponse()
    }

    /// Hands a response from a worker back to the loop. Safe from any thread.
    func post(_ completion: Completion) {
        shared.withLock { $0.completions.append(completion) }
        wake()
    }

    func processCompletions() {
        let completions = shared.withLock { state -> [Completion] in
            let taken = state.completions
            state.completions.removeAll(keepingCapacity: true)
            return taken
        }
        for completion in completions {
            // The connection may have been closed meanwhile (timeout, shutdown).
            guard let connection = connections[completion.connectionID], connection.inFlight else { continue }
            if let upgrade = completion.upgrade {
                handOver(connection, response: completion.response, upgrade: upgrade)
            } else {
                complete(connection, with: completion.response)
            }
        }
    }

    /// Queues the response of the in-flight request, then resumes parsing
    /// pipelined requests.
    func complete(_ connection: HTTPConnection, with response: HTTPResponse) {
        connection.inFlight = false
        queue(response, on: connection)
        drive(connection)
    }

    /// Serializes `response` for the connection's current request
    /// (`upgrade`: a 101 with `Connection: Upgrade`).
    func queue(_ response: HTTPResponse, on connection: HTTPConnection, upgrade: Bool = false) {
        let current = connection.current
        let close = !upgrade && (!current.keepAlive || draining || response.headers.containsToken("close", in: "connection"))
        HTTPResponseWriter.write(
            response, isHead: current.isHead, close: close, http10KeepAlive: current.http10 && !close, upgrade: upgrade,
            date: httpDate(), into: &connection.output)
        if close { connection.closeAfterFlush = true }
        connection.requestsServed += 1
        connection.lastActivity = now
        observe(
            HTTPRequestSummary(
                method: current.method, path: current.path, routePattern: current.routePattern,
                status: response.status.code, durationSeconds: Double(now &- current.started) / 1e9,
                requestBodyBytes: current.requestBodyBytes, responseBodyBytes: response.body.count))
    }
}
