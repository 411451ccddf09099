#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestSupport

// A retry delay grows while the server is down (0.5 s doubling up to
// `maximumBackoff`, 60 s), so after an outage of D seconds the next attempt
// can be up to about 2·D away: a server restarted after half a minute was
// left unused for up to a minute. When the failure says nothing listens at
// the address (connection refused), probing that address costs the server
// nothing until it listens again, so the wait probes it about once per
// `reconnectProbeInterval` and ends as soon as a connection is accepted.
extension SyncSession {
    /// Waits a retry delay after `error`, a request that got no answer. A
    /// refused connection (``TransportError/Code/connectionRefused``, also
    /// wrapped in an ``AppError``) ends the wait early once the server's
    /// address accepts a connection again, or any request of this session
    /// got an answer meanwhile; any other failure waits the whole delay.
    func backOff(_ seconds: TimeInterval, after error: any Error) async {
        let interval = configuration.reconnectProbeInterval
        guard interval > 0, seconds > interval / 2, Self.isRefusedConnection(error) else {
            return await backOff(seconds)
        }
        let clock = configuration.clock
        let deadline = clock.now() + seconds
        let heard = box.withLock { $0.heardFromServer }
        let stopped = interruption()
        let interrupted: @Sendable () -> Bool = { [box] in stopped() || box.withLock { $0.heardFromServer != heard } }
        // Bounded: each round waits at least interval / 2 of the delay.
        while !interrupted() {
            let remaining = deadline - clock.now()
            guard remaining > 0 else { return }
            await clock.pause(min(remaining, clock.random(in: (interval / 2)...interval)), interrupted: interrupted)
            guard !interrupted(), clock.now() < deadline else { return }
            // One probe per half interval for the whole session, however many uploads wait.
            let due = box.withLock { state -> Bool in
                guard clock.now() - state.lastProbe >= interval / 2 else { return false }
                state.lastProbe = clock.now()
                return true
            }
            if due, await acceptsConnections(timeout: min(interval, 5)) {
                box.withLock { $0.heardFromServer &+= 1 }
                return
            }
        }
    }

    /// Whether `error` says nothing listened at the server's address.
    static func isRefusedConnection(_ error: any Error) -> Bool {
        if let error = error as? TransportError { return error.code == .connectionRefused }
        if let error = error as? AppError, let underlying = error.underlyingError { return isRefusedConnection(underlying) }
        return false
    }

    /// Whether a TCP connection to the base URL's host and port is accepted
    /// within `timeout` seconds (closed at once, nothing sent). Runs on a
    /// queue of its own: connecting blocks.
    func acceptsConnections(timeout: Double) async -> Bool {
        let url = app.configuration.baseURL
        guard let named = url.host, !named.isEmpty else { return false }
        let host = named.hasPrefix("[") && named.hasSuffix("]") ? String(named.dropFirst().dropLast()) : named
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return await withCheckedContinuation { continuation in
            DispatchQueue(label: "dataingest.sync.reconnect-probe").async {
                let connection = try? HTTPClientConnection.connect(host: host, port: port, name: "\(host):\(port)", timeout: timeout)
                connection?.close()
                continuation.resume(returning: connection != nil)
            }
        }
    }
}
