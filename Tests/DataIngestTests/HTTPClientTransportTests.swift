#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// The socket transport against the real `ingest-server` process and against
/// a scripted server in the test (for answers the real server never gives:
/// chunked bodies, closes at awkward moments, silence).
@Suite(.serialized) struct HTTPClientTransportTests {
    // MARK: The real server

    @Test func anHTTPBaseURLUsesTheSocketTransportByDefaultAndUploadsExactlyOnce() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let app = makeTestApp(id: appId, server: server, directory: directory.path)
        #expect(app.transport is HTTPClientTransport)
        let errors = ErrorCollector()
        errors.install(on: app)
        let user = try await app.login(credentials: .anonymous)
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<3_000, perTransaction: 100)
        try await user.session.wait(for: .upload, timeout: 60)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 3_000)
        #expect(errors.errors.isEmpty)
    }

    @Test func theTransportKindSettingChoosesURLSessionOnRequest() throws {
        var configuration = App.Configuration(baseURL: URL(string: "http://127.0.0.1:9")!, metadataDirectory: "/nonexistent")
        #expect(configuration.makeTransport() is HTTPClientTransport)
        configuration.transportKind = .urlSession
        #expect(configuration.makeTransport() is URLSessionTransport)
        configuration.transportKind = .automatic
        configuration.baseURL = URL(string: "https://127.0.0.1:9")!
        #expect(configuration.makeTransport() is URLSessionTransport)
        configuration.transportKind = .sockets
        #expect(configuration.makeTransport() is HTTPClientTransport)
    }

    @Test func bodiesAndHeadersRoundTripThroughTheRealServerOnOneConnection() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, extraArguments: ["--enable-test-routes"])
        let transport = HTTPClientTransport()
        let body = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for _ in 0..<3 {
            let response = try await transport.send(
                TransportRequest(
                    method: "POST", url: URL(string: "http://127.0.0.1:\(server.port)/_test/echo?x=1%202")!,
                    headers: ["X-Check": "yes"], body: body, timeout: 10))
            #expect(response.status == 200)
            #expect(response.body == body)
            #expect(response.headers["x-echo-query"] == "x=1%202")
        }
        let headers = try await transport.send(
            TransportRequest(
                method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/_test/headers")!,
                headers: ["Authorization": "Bearer abc"], timeout: 10))
        let text = String(decoding: headers.body, as: UTF8.self)
        #expect(text.contains("Host: 127.0.0.1:\(server.port)"))
        #expect(text.contains("Authorization: Bearer abc"))
        // Keep-alive: the four requests went over one pooled connection.
        #expect(transport.idleConnectionCount == 1)
    }

    @Test func aServerKilledMidRequestFailsTheRequestAndTheRetrySucceedsAfterRestart() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, extraArguments: ["--enable-test-routes"])
        let transport = HTTPClientTransport()
        let url = URL(string: "http://127.0.0.1:\(server.port)/_test/sleep?ms=5000")!
        nonisolated(unsafe) let victim = server  // touched by the killer thread only until `killed` is signalled
        let killed = DispatchSemaphore(value: 0)
        let killer = Thread {
            usleep(500_000)
            victim.kill9()
            killed.signal()
        }
        killer.start()
        let started = monotonicNow()
        await #expect(throws: TransportError.self) {
            _ = try await transport.send(TransportRequest(method: "GET", url: url, timeout: 20))
        }
        #expect(monotonicNow() - started < 4.5)  // failed when the server died, not after the sleep
        #expect(killed.wait(timeout: .now() + 10) == .success)  // the killer is done with `server`
        do {
            _ = try await transport.send(TransportRequest(method: "GET", url: server.baseURL.appendingPathComponent("healthz"), timeout: 5))
            Issue.record("the server is down: the request must fail")
        } catch let error as TransportError {
            #expect(error.code == .connectionRefused)
            #expect(error.errno == ECONNREFUSED)
        }
        try server.restart()
        let response = try await transport.send(
            TransportRequest(
                method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/_test/sleep?ms=10")!, timeout: 10))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "slept 10\n")
    }

    @Test func aKeepAliveConnectionToAServerKilledBetweenRequestsIsReplaced() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let transport = HTTPClientTransport()
        let url = server.baseURL.appendingPathComponent("healthz")
        #expect(try await transport.send(TransportRequest(method: "GET", url: url, timeout: 5)).status == 200)
        #expect(transport.idleConnectionCount == 1)
        server.kill9()
        try server.restart()
        #expect(
            try await transport.send(TransportRequest(method: "GET", url: server.baseURL.appendingPathComponent("healthz"), timeout: 5))
                .status == 200)
    }

    @Test func aSilentServerTimesOut() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, extraArguments: ["--enable-test-routes"])
        let transport = HTTPClientTransport()
        let started = monotonicNow()
        do {
            _ = try await transport.send(
                TransportRequest(
                    method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/_test/sleep?ms=3000")!, timeout: 0.3))
            Issue.record("expected a timeout")
        } catch let error as TransportError {
            #expect(error.code == .timedOut)
        }
        #expect(monotonicNow() - started < 2.5)
    }

    // MARK: A scripted server

    @Test func chunkedAndContentLengthAnswersShareOneKeepAliveConnection() async throws {
        let seen = LockedBox<[String]>([])
        let server = try TinyHTTPServer { connection, _ in
            defer { connection.close() }
            guard let first = connection.readRequest() else { return }
            seen.withLock { $0.append(first.line + " host=" + (first.headers["host"] ?? "")) }
            connection.write(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Kind: chunked\r\n\r\n"
                    + "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
            guard let second = connection.readRequest() else { return }
            seen.withLock { $0.append(second.line + " body=" + String(decoding: second.body, as: UTF8.self)) }
            connection.write("HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone")
        }
        defer { server.stop() }
        let transport = HTTPClientTransport()
        let chunked = try await transport.send(tinyRequest(server, "a"))
        #expect(chunked.status == 200)
        #expect(String(decoding: chunked.body, as: UTF8.self) == "hello world")
        #expect(chunked.headers["x-kind"] == "chunked")
        let plain = try await transport.send(tinyRequest(server, "b", method: "POST", body: Data("ping".utf8)))
        #expect(plain.status == 201)
        #expect(String(decoding: plain.body, as: UTF8.self) == "done")
        #expect(server.accepted == 1)
        #expect(seen.withLock { $0 } == ["GET /a HTTP/1.1 host=127.0.0.1:\(server.port)", "POST /b HTTP/1.1 body=ping"])
    }

    @Test func aServerClosingAnIdleKeepAliveConnectionBetweenRequestsCostsNothing() async throws {
        let server = try TinyHTTPServer { connection, number in
            defer { connection.close() }
            guard connection.readRequest() != nil else { return }
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n\(number)")
            // Then close the idle connection, as a server's keep-alive timeout does.
        }
        defer { server.stop() }
        let transport = HTTPClientTransport()
        #expect(String(decoding: try await transport.send(tinyRequest(server)).body, as: UTF8.self) == "0")
        _ = eventually(timeout: 5) { server.served == 1 }  // the server closed the idle connection
        #expect(String(decoding: try await transport.send(tinyRequest(server)).body, as: UTF8.self) == "1")
        #expect(server.accepted == 2)
    }

    @Test func aReusedConnectionClosedWithoutAnAnswerIsRetriedOnceOnAFreshOne() async throws {
        let requests = LockedBox(0)
        let server = try TinyHTTPServer { connection, number in
            defer { connection.close() }
            if number == 0 {
                guard connection.readRequest() != nil else { return }
                requests.withLock { $0 += 1 }
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
                // The next request arrives as the server gives up on the connection.
                guard connection.readRequest() != nil else { return }
                requests.withLock { $0 += 1 }
                return
            }
            guard let request = connection.readRequest() else { return }
            requests.withLock { $0 += 1 }
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Length: \(request.body.count)\r\n\r\n" + String(decoding: request.body, as: UTF8.self))
        }
        defer { server.stop() }
        let transport = HTTPClientTransport()
        #expect(String(decoding: try await transport.send(tinyRequest(server)).body, as: UTF8.self) == "first")
        let again = try await transport.send(tinyRequest(server, method: "POST", body: Data("segment 7".utf8)))
        #expect(String(decoding: again.body, as: UTF8.self) == "segment 7")
        #expect(server.accepted == 2)
        #expect(requests.withLock { $0 } == 3)
    }

    @Test func aFreshConnectionClosedWithoutAnAnswerFailsAndIsNotRetried() async throws {
        let server = try TinyHTTPServer { connection, number in
            guard connection.readHeadOnly() else { return connection.close() }
            if number == 0 {
                connection.reset()  // as a crashed server process
                return
            }
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            connection.close()
        }
        defer { server.stop() }
        let transport = HTTPClientTransport()
        do {
            _ = try await transport.send(tinyRequest(server))
            Issue.record("expected a failure")
        } catch let error as TransportError {
            #expect(error.code == .connectionClosed)
        }
        #expect(server.accepted == 1)
        // The session's retry (here by hand) then succeeds.
        #expect(try await transport.send(tinyRequest(server)).status == 200)
    }

    @Test func connectionCloseAndHTTP10AnswersAreNotReused() async throws {
        let server = try TinyHTTPServer { connection, number in
            defer { connection.close() }
            guard connection.readRequest() != nil else { return }
            if number == 0 {
                connection.write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\none")
            } else {
                connection.write("HTTP/1.0 200 OK\r\n\r\nuntil the end")  // delimited by the close
            }
        }
        defer { server.stop() }
        let transport = HTTPClientTransport()
        #expect(String(decoding: try await transport.send(tinyRequest(server)).body, as: UTF8.self) == "one")
        #expect(transport.idleConnectionCount == 0)
        #expect(String(decoding: try await transport.send(tinyRequest(server)).body, as: UTF8.self) == "until the end")
        #expect(transport.idleConnectionCount == 0)
        #expect(server.accepted == 2)
    }

    @Test func aServerThatNeverAnswersTimesOutAndARefusedPortFailsAtOnce() async throws {
        let server = try TinyHTTPServer { connection, _ in
            defer { connection.close() }
            guard connection.readRequest() != nil else { return }
            _ = connection.readRequest()  // silent until the client gives up (bounded: 5 s)
        }
        let transport = HTTPClientTransport()
        let started = monotonicNow()
        do {
            _ = try await transport.send(tinyRequest(server, timeout: 0.3))
            Issue.record("expected a timeout")
        } catch let error as TransportError {
            #expect(error.code == .timedOut)
        }
        #expect(monotonicNow() - started < 2.5)
        let port = server.port
        server.stop()
        do {
            _ = try await transport.send(TransportRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(port)/")!, timeout: 5))
            Issue.record("expected connection refused")
        } catch let error as TransportError {
            #expect(error.code == .connectionRefused)
        }
    }

    @Test func malformedAnswersAreInvalidResponses() async throws {
        let answers = [
            "HTTP/1.1 2x0 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ]
        let server = try TinyHTTPServer { connection, number in
            defer { connection.close() }
            guard connection.readRequest() != nil, number < answers.count else { return }
            connection.write(answers[number])
        }
        defer { server.stop() }
        let transport = HTTPClientTransport()
        for _ in answers {
            do {
                _ = try await transport.send(tinyRequest(server))
                Issue.record("expected invalidResponse")
            } catch let error as TransportError {
                #expect(error.code == .invalidResponse)
            }
        }
    }

    @Test func targetsOfIPv6LiteralsHostNamesAndHTTPS() throws {
        let v6 = try HTTPClientTarget(URL(string: "http://[::1]:8080/api/x?y=1")!)
        #expect(v6.host == "::1")
        #expect(v6.hostHeader == "[::1]:8080")
        #expect(v6.requestTarget == "/api/x?y=1")
        let named = try HTTPClientTarget(URL(string: "http://ingest.example")!)
        #expect(named.host == "ingest.example")
        #expect(named.port == 80)
        #expect(named.hostHeader == "ingest.example")
        #expect(named.requestTarget == "/")
        #expect(throws: TransportError.self) { try HTTPClientTarget(URL(string: "https://127.0.0.1:9443/")!) }
    }
}
