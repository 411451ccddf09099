#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestTestSupport

/// The HTTP layer tested against a real `ingest-server` process on 127.0.0.1.
@Suite struct HTTPServerTests {
    @Test func keepAliveReusesOneConnection() throws {
        let server = try HTTPTestServer()
        let connection = try server.connect()
        for i in 0..<5 {
            try connection.send("POST /_test/echo?i=\(i) HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n\(i)")
            let response = try connection.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "\(i)")
            #expect(response.header("x-echo-query") == "i=\(i)")
            #expect(response.header("connection") == nil)
        }
        // Connection: close is honoured after the response.
        try connection.send("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        let last = try connection.readResponse()
        #expect(last.status == 200)
        #expect(last.header("connection") == "close")
        #expect(connection.waitForClose(timeout: 3))
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() throws {
        let server = try HTTPTestServer()
        let plain = try server.connect()
        try plain.send("GET /healthz HTTP/1.0\r\n\r\n")
        let response = try plain.readResponse()
        #expect(response.status == 200)
        #expect(response.header("connection") == "close")
        #expect(plain.waitForClose(timeout: 3))

        let keep = try server.connect()
        for _ in 0..<2 {
            try keep.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let r = try keep.readResponse()
            #expect(r.status == 200)
            #expect(r.header("connection") == "keep-alive")
        }
    }

    @Test func pipelinedRequestsAnswerInOrder() throws {
        let server = try HTTPTestServer(["--workers", "4"])
        let connection = try server.connect()
        // The first request is slow; later ones must still come after it.
        try connection.send(
            "GET /_test/sleep?ms=200 HTTP/1.1\r\nHost: t\r\n\r\n"
                + "POST /_test/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nfirst"
                + "POST /_test/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsecond\r\n0\r\n\r\n"
                + "HEAD /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try connection.readResponse().text == "slept 200\n")
        #expect(try connection.readResponse().text == "first")
        #expect(try connection.readResponse().text == "second")
        let head = try connection.readResponse(headRequest: true)
        #expect(head.status == 200)
        #expect(head.header("content-length") == "15")
        let missing = try connection.readResponse()
        #expect(missing.status == 404)
        #expect(missing.text.contains(#""error_code":"not_found""#))
    }

    @Test func chunkedBodiesWithExtensionsAndTrailers() throws {
        let server = try HTTPTestServer()
        let connection = try server.connect()
        let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var request = Array("PUT /_test/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var offset = 0
        for size in [1, 100, 899, 2000] {
            request += Array("\(String(size, radix: 16));ext=\"v\";flag\r\n".utf8)
            request += payload[offset..<(offset + size)]
            request += Array("\r\n".utf8)
            offset += size
        }
        request += Array("0\r\nX-Checksum: 1234\r\n\r\n".utf8)
        // Sent in small pieces to exercise partial chunk headers.
        for start in stride(from: 0, to: request.count, by: 333) {
            try connection.send(Array(request[start..<min(request.count, start + 333)]))
            usleep(1000)
        }
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.body == payload)
        // The connection is still usable afterwards.
        try connection.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
    }

    @Test func expectContinueIsAnswered() throws {
        let server = try HTTPTestServer()
        let connection = try server.connect()
        try connection.send("POST /_test/echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        let interim = try connection.readResponse()
        #expect(interim.status == 100)
        try connection.send("body")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "body")
    }

    @Test func oversizedHeadersAndBodies() throws {
        let server = try HTTPTestServer(["--max-header-bytes", "2048", "--max-body-bytes", "1000"])
        let big = String(repeating: "a", count: 3000)
        let headers = try server.request("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: \(big)\r\n\r\n")
        #expect(headers.status == 431)
        #expect(headers.text.contains(#""error_code":"headers_too_large""#))
        #expect(try server.request("GET /\(big) HTTP/1.1\r\nHost: t\r\n\r\n").status == 414)

        // 413 before the body is read: only the head is sent.
        let connection = try server.connect()
        try connection.send("POST /_test/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        let tooLarge = try connection.readResponse()
        #expect(tooLarge.status == 413)
        #expect(tooLarge.header("connection") == "close")
        #expect(connection.waitForClose(timeout: 3))

        let chunk = String(repeating: "x", count: 600)
        let chunked = try server.request(
            "POST /_test/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
        #expect(chunked.status == 413)
        // Exactly at the limit is fine.
        let atLimit = try server.request(
            "POST /_test/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n\(String(repeating: "y", count: 1000))")
        #expect(atLimit.status == 200)
        #expect(atLimit.body.count == 1000)
    }

    @Test func malformedRequestsGet400AndClose() throws {
        let server = try HTTPTestServer()
        let cases: [(String, Int)] = [
            ("GARBAGE\r\n\r\n", 400),
            ("GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("GET /healthz HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n", 400),
            ("GET /healthz HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n", 400),
            ("GET /healthz HTTP/1.1\r\nHost: t\r\nX: \u{0}\r\n\r\n", 400),
            ("GET /healthz HTTP/3.0\r\nHost: t\r\n\r\n", 505),
            ("GET /healthz\r\nHost: t\r\n\r\n", 400),
            ("GET /healthz HTTP/1.1\r\n\r\n", 400),
            ("POST /_test/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400),
            ("POST /_test/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: br, chunked\r\n\r\n", 501),
        ]
        for (raw, status) in cases {
            let connection = try server.connect()
            try connection.send(raw)
            let response = try connection.readResponse()
            #expect(response.status == status, "\(raw.debugDescription)")
            #expect(response.header("content-type") == "application/json")
            #expect(response.text.contains(#""error_code":"#))
            #expect(connection.waitForClose(timeout: 3), "\(raw.debugDescription) left the connection open")
        }
    }

    @Test func routingStatusesAndHeaders() throws {
        let server = try HTTPTestServer()
        let notAllowed = try server.request("DELETE /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(notAllowed.status == 405)
        #expect(notAllowed.header("allow") == "GET, HEAD, OPTIONS")
        let options = try server.request("OPTIONS /_test/echo HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(options.status == 204)
        #expect(options.header("allow") == "POST, PUT, OPTIONS")
        #expect(try server.request("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n").status == 204)
        let headers = try server.request("GET /_test/headers HTTP/1.1\r\nHOST: t\r\nx-MiXeD: Value\r\n\r\n")
        #expect(headers.text == "HOST: t\nx-MiXeD: Value\n")
        #expect(headers.header("date")?.hasSuffix(" GMT") == true)
    }

    @Test func slowClientDoesNotDelayOthers() throws {
        let server = try HTTPTestServer(["--workers", "2"])
        let slow = try server.connect()
        let request = Array("GET /healthz HTTP/1.1\r\nHost: slow\r\n\r\n".utf8)
        let fast = try server.connect()
        var worst = 0.0
        // A byte every 100 ms from the slow client (the first 20 bytes, then
        // the rest at once), a full request from the fast one in between.
        for (i, byte) in request.enumerated() where i < 20 {
            try slow.send([byte])
            let start = monotonicNow()
            try fast.send("GET /healthz HTTP/1.1\r\nHost: fast\r\n\r\n")
            #expect(try fast.readResponse(timeout: 2).status == 200)
            worst = max(worst, monotonicNow() - start)
            usleep(100_000)
        }
        #expect(worst < 0.5, "a fast request took \(worst) s while a slow client was sending")
        try slow.send(Array(request[20...]))
        #expect(try slow.readResponse().status == 200)
    }

    @Test func timeoutsCloseIdleAndStalledConnections() throws {
        let server = try HTTPTestServer([
            "--keep-alive-timeout", "0.3", "--header-timeout", "0.5", "--body-timeout", "0.3",
        ])
        // Keep-alive idle timeout after a request.
        let idle = try server.connect()
        try idle.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        let start = monotonicNow()
        #expect(idle.waitForClose(timeout: 3))
        let elapsed = monotonicNow() - start
        #expect(elapsed > 0.2 && elapsed < 2, "closed after \(elapsed) s")

        // A connection that never sends anything.
        let silent = try server.connect()
        #expect(silent.waitForClose(timeout: 3))

        // A head that stalls: 408 and close.
        let stalled = try server.connect()
        try stalled.send("GET /healthz HTTP/1.1\r\nHost:")
        let timedOut = try stalled.readResponse(timeout: 3)
        #expect(timedOut.status == 408)
        #expect(stalled.waitForClose(timeout: 3))

        // A body that stalls.
        let body = try server.connect()
        try body.send("POST /_test/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        #expect(try body.readResponse(timeout: 3).status == 408)
    }

    @Test func clientThatDoesNotReadIsClosedAfterWriteTimeout() throws {
        let server = try HTTPTestServer(["--write-timeout", "0.3"])
        let stuck = try server.connect()
        let size = 32 << 20
        try stuck.send("POST /_test/echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(size)\r\n\r\n")
        try stuck.send([UInt8](repeating: 120, count: size))
        // The server cannot send the 32 MiB echo: nobody reads. Others are served meanwhile.
        usleep(100_000)
        #expect(try server.request("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        usleep(1_000_000)
        // Now read: the server gave up, so fewer than all bytes arrive before the close.
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(stuck.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received = 0
        var closedByServer = false
        let deadline = monotonicNow() + 10
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while monotonicNow() < deadline {
            let n = recv(stuck.fd, &chunk, chunk.count, 0)
            if n > 0 {
                received += n
                continue
            }
            closedByServer = n == 0 || errno == ECONNRESET
            break
        }
        #expect(closedByServer)
        #expect(received > 0)
        #expect(received < size, "the whole response arrived: the write timeout did not close the connection")
    }

    @Test func connectionLimitRejectsExtraConnections() throws {
        let server = try HTTPTestServer(["--max-connections", "2"])
        let a = try server.connect()
        let b = try server.connect()
        for c in [a, b] {
            try c.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try c.readResponse().status == 200)
        }
        let c = try server.connect()
        let rejected = try c.readResponse(timeout: 3)
        #expect(rejected.status == 503)
        #expect(rejected.header("retry-after") == "1")
        #expect(c.waitForClose(timeout: 3))
        // Freeing a slot lets new clients in again.
        try a.send("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(try a.readResponse().status == 200)
        #expect(a.waitForClose(timeout: 3))
        a.close()
        usleep(100_000)
        #expect(try server.request("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
    }

    @Test func sigtermFinishesInFlightRequestAndExitsZero() throws {
        let server = try HTTPTestServer(["--shutdown-grace", "5"])
        let busy = try server.connect()
        try busy.send("GET /_test/sleep?ms=700 HTTP/1.1\r\nHost: t\r\n\r\n")
        let idle = try server.connect()
        try idle.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        usleep(200_000)
        kill(server.pid, SIGTERM)
        let response = try busy.readResponse(timeout: 5)
        #expect(response.status == 200)
        #expect(response.text == "slept 700\n")
        #expect(response.header("connection") == "close")
        #expect(idle.waitForClose(timeout: 3))
        #expect(server.waitForExit(timeout: 5) == 0)
        #expect(try server.nextStdoutLine(timeout: 2) == "stopped")
    }

    @Test func shutdownGraceIsBounded() throws {
        let server = try HTTPTestServer(["--shutdown-grace", "0.3"])
        let busy = try server.connect()
        try busy.send("GET /_test/sleep?ms=5000 HTTP/1.1\r\nHost: t\r\n\r\n")
        usleep(200_000)
        let start = monotonicNow()
        kill(server.pid, SIGTERM)
        #expect(server.waitForExit(timeout: 4) == 0)
        #expect(monotonicNow() - start < 3.5)
    }
}
