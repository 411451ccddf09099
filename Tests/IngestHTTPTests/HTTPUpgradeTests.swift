#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import IngestHTTP
import IngestSupport
import IngestTestSupport

/// The upgrade seam a WebSocket endpoint builds on: a real upgrade over a
/// real socket to a small "shout" protocol (the session answers each read
/// in upper case), refusals, requests that did not ask, and shutdown with
/// upgraded connections open.
@Suite struct HTTPUpgradeTests {
    /// A server running on a thread of its own, shut down and awaited when released.
    final class RunningServer {
        let server: HTTPServer
        private let finished = LockedBox(false)

        init(router: HTTPRouter, grace: Double = 5) throws {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            configuration.workerThreads = 2
            configuration.shutdownGracePeriod = grace
            server = HTTPServer(configuration: configuration, router: router)
            try server.start()
            let server = self.server, finished = self.finished
            let thread = Thread {
                try? server.run()
                finished.withLock { $0 = true }
            }
            thread.start()
        }

        var port: UInt16 { UInt16(server.port) }
        var hasStopped: Bool { finished.withLock { $0 } }

        /// Shuts down and waits up to `timeout` seconds; whether `run()` returned.
        @discardableResult
        func stop(timeout: Double = 10) -> Bool {
            server.shutdown()
            let deadline = monotonicNow() + timeout
            while !hasStopped && monotonicNow() < deadline { usleep(5_000) }
            return hasStopped
        }

        deinit { stop() }
    }

    /// What the sessions saw, for the assertions.
    struct SessionLog {
        var started = 0
        var ended = 0
        var paths: [String] = []
        var shutdownCalls = 0
    }

    static func shoutRouter(_ log: LockedBox<SessionLog>) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/plain") { _ in .text("plain") }
        router.upgrade("/shout/{room}") { request in
            guard request.headers["upgrade"]?.lowercased() == "shout" else {
                return .refuse(.error(.badRequest, code: "shout_only", message: "This endpoint speaks shout."))
            }
            let room = request.pathParameters["room"] ?? ""
            return .accept(headers: ["Upgrade": "shout", "X-Room": room]) { connection in
                log.withLock {
                    $0.started += 1
                    $0.paths.append(connection.request.path)
                }
                connection.onShutdown = {
                    log.withLock { $0.shutdownCalls += 1 }
                    // Goodbye in the protocol, then end the sending side.
                    try? connection.write(Array("BYE\n".utf8))
                    connection.closeGracefully()
                }
                while let bytes = try? connection.read(timeout: 30), !bytes.isEmpty {
                    let text = String(decoding: bytes, as: UTF8.self)
                    if text == "hold" { continue }  // keeps the session open, answering nothing
                    try? connection.write(Array(text.uppercased().utf8))
                }
                log.withLock { $0.ended += 1 }
            }
        }
        return router
    }

    static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = monotonicNow() + timeout
        while !condition() && monotonicNow() < deadline { usleep(5_000) }
        return condition()
    }

    @Test("an accepted upgrade answers 101 and hands the socket, with the bytes already sent, to the session")
    func acceptedUpgradeCarriesTheSocketAndEarlyBytes() throws {
        let log = LockedBox(SessionLog())
        let running = try RunningServer(router: Self.shoutRouter(log))
        let connection = try LoopbackConnection(port: running.port)
        // The new protocol's first bytes travel in the same packet as the request.
        try connection.send("GET /shout/lobby HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, Upgrade\r\nUpgrade: shout\r\n\r\nhello")
        let switched = try connection.readResponse()
        #expect(switched.status == 101)
        #expect(switched.header("upgrade") == "shout")
        #expect(switched.header("connection") == "Upgrade")
        #expect(switched.header("x-room") == "lobby")
        #expect(switched.header("content-length") == nil)
        #expect(try connection.readBytes(5) == Array("HELLO".utf8))
        try connection.send("again")
        #expect(try connection.readBytes(5) == Array("AGAIN".utf8))
        // The client ends: the session sees end of input and returns; the server closes.
        connection.shutdownWrite()
        #expect(connection.waitForClose(timeout: 5))
        #expect(Self.waitUntil(timeout: 5) { log.withLock { $0.ended } == 1 })
        #expect(log.withLock { $0.paths } == ["/shout/lobby"])
        // The server forgets the connection once the session has returned.
        #expect(Self.waitUntil(timeout: 5) { running.server.upgradedConnections.isEmpty })
        #expect(running.stop())
    }

    @Test("a refused upgrade, or a request that did not ask for one, stays HTTP on the same connection")
    func refusalsStayHTTP() throws {
        let log = LockedBox(SessionLog())
        let running = try RunningServer(router: Self.shoutRouter(log))
        let connection = try LoopbackConnection(port: running.port)
        try connection.send("GET /shout/a HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        let refused = try connection.readResponse()
        #expect(refused.status == 400)
        #expect(refused.text == #"{"error":"This endpoint speaks shout.","error_code":"shout_only"}"#)
        try connection.send("GET /shout/a HTTP/1.1\r\nHost: t\r\n\r\n")
        let notAsked = try connection.readResponse()
        #expect(notAsked.status == 426)
        #expect(notAsked.text.contains(#""error_code":"upgrade_required""#))
        // HTTP/1.0 cannot upgrade (RFC 9110 §7.8).
        try connection.send("GET /shout/a HTTP/1.0\r\nConnection: keep-alive, Upgrade\r\nUpgrade: shout\r\n\r\n")
        #expect(try connection.readResponse().status == 426)
        try connection.send("GET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try connection.readResponse().text == "plain")
        #expect(log.withLock { $0.started } == 0)
        #expect(running.stop())
    }

    @Test("shutdown tells open sessions, waits for them within the grace period, then cuts them off")
    func shutdownWithOpenSessions() throws {
        // Graceful: the session says goodbye when told and ends.
        do {
            let log = LockedBox(SessionLog())
            let running = try RunningServer(router: Self.shoutRouter(log), grace: 10)
            let connection = try LoopbackConnection(port: running.port)
            try connection.send("GET /shout/x HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n")
            #expect(try connection.readResponse().status == 101)
            #expect(Self.waitUntil(timeout: 5) { log.withLock { $0.started } == 1 })
            running.server.shutdown()
            #expect(try connection.readBytes(4) == Array("BYE\n".utf8))
            connection.shutdownWrite()  // the client answers the goodbye
            #expect(Self.waitUntil(timeout: 5) { running.hasStopped })
            #expect(log.withLock { ($0.shutdownCalls, $0.ended) } == (1, 1))
        }
        // Forced: a client that never answers is cut off when the grace period ends.
        do {
            let log = LockedBox(SessionLog())
            let running = try RunningServer(router: Self.shoutRouter(log), grace: 0.3)
            let connection = try LoopbackConnection(port: running.port)
            try connection.send("GET /shout/y HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\nhold")
            #expect(try connection.readResponse().status == 101)
            #expect(Self.waitUntil(timeout: 5) { log.withLock { $0.started } == 1 })
            let started = monotonicNow()
            running.server.shutdown()
            #expect(Self.waitUntil(timeout: 5) { running.hasStopped })
            #expect(monotonicNow() - started < 4)
            #expect(Self.waitUntil(timeout: 5) { log.withLock { $0.ended } == 1 })
            #expect(connection.waitForClose(timeout: 5))
        }
    }
}
