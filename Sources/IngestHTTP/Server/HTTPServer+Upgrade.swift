#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation

extension HTTPServer {
    /// A request matched an upgrade route: one that did not ask to switch
    /// protocols gets 426 on the loop; the others run the handler on the
    /// worker pool, which decides.
    func dispatchUpgrade(_ request: HTTPRequest, handler: @escaping HTTPUpgradeHandler, on connection: HTTPConnection) {
        let asked =
            request.method == "GET" && request.version.minor >= 1 && request.headers.contains("upgrade")
            && request.headers.containsToken("upgrade", in: "connection")
        guard asked else {
            complete(
                connection,
                with: HTTPError(
                    .upgradeRequired, code: .upgradeRequired,
                    "\(request.path) switches protocols: send a GET with `Connection: Upgrade` and an `Upgrade` header over HTTP/1.1."
                ).httpResponse())
            return
        }
        guard let pool else { return }
        let id = connection.id
        pool.submit { [self] in
            let completion: Completion
            do {
                switch try handler(request) {
                case .accept(let headers, let session):
                    completion = Completion(
                        connectionID: id, response: HTTPResponse(status: .switchingProtocols, headers: headers),
                        upgrade: AcceptedUpgrade(request: request, session: session))
                case .refuse(let response):
                    completion = Completion(connectionID: id, response: response)
                }
            } catch {
                completion = Completion(connectionID: id, response: errorResponse(error, request))
            }
            post(completion)
        }
    }

    /// Queues the 101, takes the connection off the loop (no longer polled,
    /// parsed or timed out; not closed) and starts its session on a thread
    /// of its own, which first sends what is still queued.
    func handOver(_ connection: HTTPConnection, response: HTTPResponse, upgrade: AcceptedUpgrade) {
        if draining {
            complete(
                connection,
                with: HTTPError(
                    .serviceUnavailable, code: .unavailable, "The server is shutting down; retry later.",
                    headers: ["Retry-After": "1"]
                ).httpResponse())
            return
        }
        connection.inFlight = false
        queue(response, on: connection, upgrade: true)
        let pending = Array(connection.output[connection.outputIndex...])
        let initialBytes = connection.parser.takeBufferedBytes()
        epoll_ctl(epollFD, EPOLL_CTL_DEL, connection.fd, nil)
        connections.removeValue(forKey: connection.id)
        let flags = fcntl(connection.fd, F_GETFL)
        _ = fcntl(connection.fd, F_SETFL, flags & ~O_NONBLOCK)

        let upgraded = HTTPUpgradedConnection(
            request: upgrade.request, fileDescriptor: connection.fd, initialBytes: initialBytes)
        let id = connection.id
        shared.withLock { $0.upgraded[id] = upgraded }
        let session = upgrade.session
        let thread = Thread { [self] in
            do {
                try upgraded.write(pending)
                session(upgraded)
            } catch {
                logger.notice("upgraded connection \(upgrade.request.path): could not send the 101 answer: \(error)")
            }
            upgraded.close()
            shared.withLock { _ = $0.upgraded.removeValue(forKey: id) }
            wake()
        }
        thread.name = "http-upgrade-\(id)"
        thread.start()
    }

    /// The upgraded connections whose session still runs.
    var upgradedConnections: [HTTPUpgradedConnection] {
        shared.withLock { Array($0.upgraded.values) }
    }
}
