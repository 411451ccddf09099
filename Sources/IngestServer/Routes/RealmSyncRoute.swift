#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import IngestHTTP
import IngestSupport
import RealmSync

/// The routes of the Realm sync protocol (Docs/RealmCompatibility.md).
package enum RealmRoutes {
    /// `GET`: where the app's HTTP and WebSocket endpoints are.
    package static let locationPattern = "/api/client/v2.0/app/{appId}/location"
    /// `GET` with `Authorization: Bearer <access_token>`: the user's profile.
    package static let profilePath = "/api/client/v2.0/auth/profile"
    /// The WebSocket upgrade, `?baas_at=<access_token>`.
    package static let syncPattern = "/api/client/v2.0/app/{appId}/realm-sync"
}

extension RealmSyncService {
    /// Registers the HTTP calls a Realm app makes besides login and session
    /// refresh (which are the server's own, Routes/AuthRoutes.swift) and the
    /// WebSocket endpoint:
    ///
    /// - `GET /api/client/v2.0/app/{appId}/location` → 200
    ///   `{"deployment_model":"GLOBAL","location":"local","hostname":"http://host:port","ws_hostname":"ws://host:port"}`
    ///   (the `Host` header; `X-Forwarded-Proto: https` and `X-Forwarded-Host`
    ///   from a TLS reverse proxy give `https://` and `wss://`);
    /// - `GET /api/client/v2.0/auth/profile` → 200 ``UserProfile/jsonBody``;
    /// - `GET /api/client/v2.0/app/{appId}/realm-sync?baas_at=<token>` upgraded
    ///   to a WebSocket speaking `com.mongodb.realm-query-sync#14`.
    ///
    /// ```swift
    /// var router = HTTPRouter()
    /// realm.addRoutes(to: &router)
    /// ```
    package func addRoutes(to router: inout HTTPRouter) {
        router.get(RealmRoutes.locationPattern) { [self] request in
            let appId = request.pathParameters["appId"] ?? ""
            guard hasApp(appId) else { return Self.unknownApp(appId) }
            let host =
                request.headers["x-forwarded-host"]?.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) }
                ?? request.headers["host"] ?? "127.0.0.1"
            let secure = request.headers["x-forwarded-proto"]?.lowercased().hasPrefix("https") == true
            let body = JSONValue.object([
                .init("deployment_model", .string("GLOBAL")),
                .init("location", .string("local")),
                .init("hostname", .string((secure ? "https://" : "http://") + host)),
                .init("ws_hostname", .string((secure ? "wss://" : "ws://") + host)),
            ])
            return .json(body.jsonText)
        }
        router.get(RealmRoutes.profilePath) { [auth] request in
            HTTPRouter.authResponse { () throws(AuthError) in
                guard case .bearer(let token) = PresentedToken(authorization: request.headers["authorization"]) else {
                    throw AuthError(.invalidToken, "send the access token as \"Authorization: Bearer <access_token>\"")
                }
                return .json(try auth.profile(accessToken: token).jsonBody)
            }
        }
        router.upgrade(RealmRoutes.syncPattern) { [self] request in upgrade(request) }
    }

    static func unknownApp(_ appId: String) -> HTTPResponse {
        ServiceErrorKind.notFound.httpResponse(
            code: "unknown_app", message: "no app with id \"\(appId)\" is configured on this server",
            retryAfterSeconds: nil)
    }

    /// Decides an upgrade: the app, the WebSocket handshake, a subprotocol
    /// of version 14 or later, the `baas_at` token (the connection limit is
    /// checked once switched: over it, the client gets close code 1013).
    func upgrade(_ request: HTTPRequest) -> HTTPUpgradeDecision {
        let appId = request.pathParameters["appId"] ?? ""
        guard hasApp(appId) else { return .refuse(Self.unknownApp(appId)) }
        let handshake: WebSocketUpgradeRequest
        do {
            handshake = try WebSocketUpgradeRequest(method: request.method, headers: request.headers.map { ($0.name, $0.value) })
        } catch {
            var response = ServiceErrorKind.invalidRequest.httpResponse(
                code: "bad_websocket_handshake", message: error.message,
                retryAfterSeconds: nil)
            if error.code == .unsupportedVersion { response.headers.add(name: "Sec-WebSocket-Version", value: "13") }
            return .refuse(response)
        }
        guard let chosen = SyncProtocolVersion.choose(offered: handshake.subprotocols) else {
            let supported = SyncProtocolVersion.supported.map { SyncProtocolVersion.subprotocol(version: $0) }.joined(separator: ", ")
            return .refuse(
                ServiceErrorKind.invalidRequest.httpResponse(
                    code: "unsupported_sync_protocol",
                    message:
                        "this server speaks \(supported); the client offered \(handshake.subprotocols.isEmpty ? "none" : handshake.subprotocols.joined(separator: ", ")) (update the Realm SDK)",
                    retryAfterSeconds: nil))
        }
        let claims: AccessClaims
        do {
            claims = try authenticate(appId: appId, token: Self.rawQueryParameter("baas_at", in: request.query))
        } catch {
            return .refuse(error.httpResponse)
        }
        let headers = HTTPHeaders(
            WebSocketHandshake.responseHeaders(for: handshake, subprotocol: chosen.name)
                .filter { $0.name != "Connection" }.map { ($0.name, $0.value) })
        let version = chosen.version
        return .accept(headers: headers) { [self] upgraded in
            // Counted here, where it is sure to be counted out.
            guard admitConnection() else {
                try? upgraded.write(
                    WebSocketFrameEncoder.closeFrame(
                        code: .tryAgainLater, reason: "\(configuration.maxConnections) sync connections are open; retry later"))
                return
            }
            defer { connectionClosed() }
            let sync = connection(appId: appId, claims: claims, protocolVersion: version)
            WebSocketSession(service: self, connection: upgraded, sync: sync).run()
        }
    }

    /// A query parameter's value percent-decoded but with `+` kept: Realm
    /// clients send `baas_at` without URL-encoding it.
    static func rawQueryParameter(_ name: String, in query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == name else { continue }
            let value = parts.count > 1 ? String(parts[1]) : ""
            return value.removingPercentEncoding ?? value
        }
        return nil
    }
}

/// The WebSocket side of one Realm connection, on the upgraded
/// connection's own thread: reads frames within the idle timeout, hands
/// each binary message to the ``RealmSyncConnection``, writes its answers
/// as binary frames (a write that stalls past the write timeout closes the
/// connection), answers pings and the close handshake, and says goodbye
/// (1001) when the server shuts down.
///
/// A shutdown never cuts a message off: one being handled (an upload whose
/// sink transaction is running) is finished and answered first, then the
/// goodbye follows; a message read after the goodbye is not handled. So an
/// upload in flight at a shutdown is either acknowledged or not stored.
struct WebSocketSession {
    let service: RealmSyncService
    let connection: HTTPUpgradedConnection
    let sync: RealmSyncConnection
    /// Writes come from the session thread and from the shutdown callback.
    private let writeLock = Lock()

    /// Whether a message is being handled, and whether the server is stopping.
    struct Phase {
        var handling = false
        var stopping = false
    }
    private let phase = LockedBox(Phase())
    static let goodbye = "the server is restarting"

    init(service: RealmSyncService, connection: HTTPUpgradedConnection, sync: RealmSyncConnection) {
        self.service = service
        self.connection = connection
        self.sync = sync
    }

    func run() {
        var timeout = timeval(tv_sec: Int(service.configuration.writeTimeoutSeconds), tv_usec: 0)
        _ = setsockopt(connection.fileDescriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connection = self.connection
        let writeLock = self.writeLock
        let phase = self.phase
        connection.onShutdown = {
            // While a message is handled, the session thread says goodbye after its answer.
            let now = phase.withLock { phase -> Bool in
                phase.stopping = true
                return !phase.handling
            }
            guard now else { return }
            writeLock.withLock {
                try? connection.write(WebSocketFrameEncoder.closeFrame(code: .goingAway, reason: Self.goodbye))
            }
            connection.closeGracefully()
        }
        var reader = WebSocketMessageReader(configuration: .init(maxMessageBytes: service.configuration.maxMessageBytes))
        // One buffer for every read of the connection.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            do {
                count = try connection.read(into: buffer, timeout: service.configuration.idleTimeoutSeconds)
            } catch {
                if error.code == .timedOut {
                    let seconds = service.configuration.idleTimeoutSeconds
                    close(.goingAway, "idle for \(seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)) s")
                }
                return
            }
            if count == 0 { return }
            reader.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            do {
                while let event = try reader.next() {
                    switch event {
                    case .binary(let message):
                        // After the goodbye nothing more is handled (its answer could not be sent).
                        let stopping = phase.withLock { phase -> Bool in
                            phase.handling = !phase.stopping
                            return phase.stopping
                        }
                        if stopping {
                            waitForClose()
                            return
                        }
                        let reply = sync.receive(message)
                        var out: [UInt8] = []
                        for answer in reply.messages { WebSocketFrameEncoder.append(.binary, payload: answer.encoded(), to: &out) }
                        let sent = send(out)
                        let stopped = phase.withLock { phase -> Bool in
                            phase.handling = false
                            return phase.stopping
                        }
                        guard sent else { return }
                        if reply.close {
                            close(.policyViolation, "sync protocol error")
                            return
                        }
                        if stopped {
                            close(.goingAway, Self.goodbye)
                            return
                        }
                    case .text:
                        close(.unsupportedData, "Realm sync messages are binary frames")
                        return
                    case .ping(let payload):
                        guard send(WebSocketFrameEncoder.frame(.pong, payload: payload)) else { return }
                    case .pong:
                        continue
                    case .close:
                        close(.normalClosure, "")
                        return
                    }
                }
            } catch {
                close(error.closeCode, error.message)
                return
            }
        }
    }

    private func send(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        do {
            try writeLock.withLock { () throws(HTTPServerError) in try connection.write(bytes) }
            return true
        } catch {
            return false
        }
    }

    /// Sends a close frame, ends the sending side, and waits briefly for the
    /// client's own close (bounded: 2 s, 64 reads).
    private func close(_ code: WebSocketCloseCode, _ reason: String) {
        _ = send(WebSocketFrameEncoder.closeFrame(code: code, reason: reason))
        connection.closeGracefully()
        waitForClose()
    }

    /// Reads until the client closes its side (bounded: 2 s per read, 64 reads).
    private func waitForClose() {
        for _ in 0..<64 {
            guard let bytes = try? connection.read(maxBytes: 64 * 1024, timeout: 2), !bytes.isEmpty else { return }
        }
    }
}
