#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import IngestHTTP
import IngestSupport
import IngestTestSupport
import Logging

/// The `HTTPServer` library API used in-process, as `IngestService` does:
/// async handlers, thrown errors, the request observer and `shutdown()`.
/// (Protocol behaviour is tested against the real process in HTTPServerTests.)
@Suite struct HTTPServerEmbeddingTests {
    actor Counter {
        var value = 0
        func next() -> Int {
            value += 1
            return value
        }
    }

    struct Teapot: HTTPResponseConvertibleError {
        func httpResponse() -> HTTPResponse { .text("short and stout", status: HTTPStatus(code: 418, reasonPhrase: "I'm a teapot")) }
    }

    struct Unexpected: Error {}

    @Test func asyncHandlersErrorsObserverAndShutdown() throws {
        let counter = Counter()
        var router = HTTPRouter()
        router.addAsync("POST", "/count") { _ in .text("\(await counter.next())") }
        router.get("/teapot") { _ in throw Teapot() }
        router.get("/http-error") { _ in
            throw HTTPError(.conflict, code: .init("already_there"), "It exists.", headers: ["Retry-After": "3"])
        }
        router.get("/crash") { _ in throw Unexpected() }
        router.get("/items/{id}") { request in .text("item \(request.pathParameters["id"] ?? "")") }

        let summaries = LockedBox([HTTPRequestSummary]())
        let logs = LockedBox([String]())
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.workerThreads = 2
        configuration.requestObserver = { summary in summaries.withLock { $0.append(summary) } }
        configuration.logger = Logger(label: "test") { _ in RecordingLogHandler(logs) }
        let server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        #expect(server.port > 0)
        #expect(server.url == "http://127.0.0.1:\(server.port)")

        let finished = LockedBox(false)
        let thread = Thread {
            try? server.run()
            finished.withLock { $0 = true }
        }
        thread.start()
        defer {
            server.shutdown()
            let deadline = monotonicNow() + 5
            while !finished.withLock({ $0 }) && monotonicNow() < deadline { usleep(10_000) }
        }

        let connection = try LoopbackConnection(port: UInt16(server.port))
        for expected in 1...3 {
            try connection.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
            // The async handler needs a thread of the shared concurrency pool,
            // which the other (blocking) tests running in parallel may hold
            // for a while on a 2-core machine: hence the generous bound.
            #expect(try connection.readResponse(timeout: 60).text == "\(expected)")
        }
        try connection.send("GET /teapot HTTP/1.1\r\nHost: t\r\n\r\n")
        let teapot = try connection.readResponse()
        #expect(teapot.status == 418)
        #expect(teapot.text == "short and stout")
        try connection.send("GET /http-error HTTP/1.1\r\nHost: t\r\n\r\n")
        let conflict = try connection.readResponse()
        #expect(conflict.status == 409)
        #expect(conflict.header("retry-after") == "3")
        #expect(conflict.text == #"{"error":"It exists.","error_code":"already_there"}"#)
        try connection.send("GET /crash HTTP/1.1\r\nHost: t\r\n\r\n")
        let crash = try connection.readResponse()
        #expect(crash.status == 500)
        #expect(crash.text.contains(#""error_code":"internal_error""#))
        try connection.send("GET /items/a%2Fb HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try connection.readResponse().text == "item a/b")

        let seen = summaries.withLock { $0 }
        #expect(seen.count == 7)
        #expect(seen.first?.routePattern == "/count")
        #expect(seen.map(\.status) == [200, 200, 200, 418, 409, 500, 200])
        #expect(seen.last?.routePattern == "/items/{id}")
        #expect(seen.allSatisfy { $0.durationSeconds >= 0 && $0.durationSeconds < 60 })
        #expect(logs.withLock { $0 }.contains { $0.contains("/crash") })

        // shutdown() from another thread: run() returns and the port is closed.
        server.shutdown()
        let deadline = monotonicNow() + 5
        while !finished.withLock({ $0 }) && monotonicNow() < deadline { usleep(10_000) }
        #expect(finished.withLock { $0 })
        #expect(connection.waitForClose(timeout: 2))
        #expect(throws: TestSupportError.self) { _ = try LoopbackConnection(port: UInt16(server.port)) }
    }

    @Test func startFailsWithAClearErrorWhenThePortIsTaken() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let first = HTTPServer(configuration: configuration, router: HTTPRouter())
        try first.start()
        configuration.port = first.port
        let second = HTTPServer(configuration: configuration, router: HTTPRouter())
        #expect {
            try second.start()
        } throws: { error in
            guard let error = error as? HTTPServerError else { return false }
            return error.code == .bind && error.errno == EADDRINUSE && error.message.contains("\(first.port)")
        }
    }
}
