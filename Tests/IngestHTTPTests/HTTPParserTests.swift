import Testing
@testable import IngestHTTP

/// The request parser on its own: the same bytes must give the same result
/// whether they arrive at once or one byte at a time.
@Suite struct HTTPParserTests {
    static let limits = HTTPRequestParser.Limits(maxHeaderBytes: 1024, maxHeaderCount: 20, maxBodyBytes: 1000)

    enum Outcome: Equatable {
        case request(method: String, target: String, body: [UInt8], keepAlive: Bool)
        case error(Int)
        case continueSent
    }

    /// Parses `input` delivered in pieces of `step` bytes; returns all events.
    func parse(_ input: String, step: Int = Int.max) -> [Outcome] {
        var parser = HTTPRequestParser(limits: Self.limits)
        var outcomes: [Outcome] = []
        let bytes = Array(input.utf8)
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + max(1, min(step, bytes.count)))
            parser.append(Array(bytes[offset..<end]))
            offset = end
            events: while true {
                switch parser.next() {
                case .needMoreData: break events
                case .expectContinue: outcomes.append(.continueSent)
                case .request(let r, let keepAlive):
                    outcomes.append(.request(method: r.method, target: r.target, body: r.body, keepAlive: keepAlive))
                case .error(let e):
                    outcomes.append(.error(e.status.code))
                    return outcomes
                }
            }
        } while offset < bytes.count
        return outcomes
    }

    func both(_ input: String) -> [Outcome] {
        let whole = parse(input)
        let bytewise = parse(input, step: 1)
        #expect(
            whole.filter { $0 != .continueSent } == bytewise.filter { $0 != .continueSent },
            "split delivery changed the result for \(input.debugDescription)")
        return whole
    }

    @Test func simpleAndPipelinedRequests() {
        let out = both(
            "GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        )
        #expect(
            out == [
                .request(method: "GET", target: "/a?x=1", body: [], keepAlive: true),
                .request(method: "POST", target: "/b", body: Array("abc".utf8), keepAlive: true),
                .request(method: "GET", target: "/c", body: [], keepAlive: false),
            ])
    }

    @Test func http10KeepAliveRules() {
        #expect(both("GET / HTTP/1.0\r\n\r\n") == [.request(method: "GET", target: "/", body: [], keepAlive: false)])
        #expect(
            both("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == [.request(method: "GET", target: "/", body: [], keepAlive: true)])
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() {
        let input =
            "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value;q=\"a \\\"quoted\\\" ext\"\r\nhello\r\n"
            + "6 ; flag\r\n world\r\n"
            + "0\r\nX-Trailer: yes\r\nChecksum: abc\r\n\r\n"
        #expect(both(input) == [.request(method: "POST", target: "/u", body: Array("hello world".utf8), keepAlive: true)])
    }

    @Test func absoluteFormTargetBecomesOriginForm() {
        #expect(
            both("GET http://example.com/p?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n")
                == [.request(method: "GET", target: "/p?q=1", body: [], keepAlive: true)])
    }

    @Test func leadingEmptyLinesAreIgnored() {
        #expect(both("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == [.request(method: "GET", target: "/", body: [], keepAlive: true)])
    }

    @Test func expectContinueIsSignalled() {
        let out = parse("POST /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        #expect(out == [.continueSent])
        #expect(both("POST /u HTTP/1.1\r\nHost: h\r\nExpect: something\r\nContent-Length: 2\r\n\r\nab") == [.error(417)])
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabcd", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n", 413),
        ("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        ("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
        ("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;=x\r\nabc\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\"x\r\nabc\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nBad Name: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX : a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX: a\u{01}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\n: empty\r\n\r\n", 400),
        ("GET / HTTP/1.1\nHost: h\n\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400),
        ("GET /\u{7F} HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET foo HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/11\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
        ("GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505),
    ])
    func rejectsMalformedAndAmbiguousRequests(input: String, status: Int) {
        #expect(both(input).last == .error(status), "\(input.debugDescription)")
    }

    @Test func headerLimits() {
        let long = String(repeating: "a", count: 1100)
        #expect(both("GET /\(long) HTTP/1.1\r\nHost: h\r\n\r\n") == [.error(414)])
        #expect(both("GET / HTTP/1.1\r\nHost: h\r\nX: \(long)\r\n\r\n") == [.error(431)])
        let many = (0..<21).map { "X-\($0): v\r\n" }.joined()
        #expect(both("GET / HTTP/1.1\r\nHost: h\r\n\(many)\r\n") == [.error(431)])
        let bigTrailer = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: \(long)\r\n\r\n"
        #expect(both(bigTrailer) == [.error(431)])
    }

    @Test func chunkedBodyOverLimitIs413() {
        let chunk = String(repeating: "x", count: 600)
        let input = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n"
        #expect(both(input) == [.error(413)])
    }

    @Test func headersAreCaseInsensitive() {
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(Array("GET / HTTP/1.1\r\nhOsT: h\r\nX-Custom:  padded value \t\r\n\r\n".utf8))
        guard case .request(let request, _) = parser.next() else {
            Issue.record("no request")
            return
        }
        #expect(request.headers["x-custom"] == "padded value")
        #expect(request.headers["HOST"] == "h")
    }
}

@Suite struct HTTPRouterTests {
    func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.post("/api/client/v2.0/app/{appId}/auth/providers/{provider}/login") { _ in .text("login") }
        router.get("/apps/{id}") { _ in .text("param") }
        router.get("/apps/new") { _ in .text("literal") }
        router.delete("/apps/{id}") { _ in .text("delete") }
        return router
    }

    @Test func extractsDecodedParameters() {
        guard
            case .matched(let route, let parameters) = router().resolve(
                method: "POST", path: "/api/client/v2.0/app/my%20app/auth/providers/anon-user/login")
        else {
            Issue.record("no match")
            return
        }
        #expect(route.pattern == "/api/client/v2.0/app/{appId}/auth/providers/{provider}/login")
        #expect(parameters == ["appId": "my app", "provider": "anon-user"])
    }

    @Test func literalSegmentsWinOverParameters() {
        guard case .matched(let route, _) = router().resolve(method: "GET", path: "/apps/new") else {
            Issue.record("no match")
            return
        }
        #expect(route.pattern == "/apps/new")
    }

    @Test func headUsesGetAndUnknownMethodsListAllow() {
        guard case .matched(let route, _) = router().resolve(method: "HEAD", path: "/apps/7") else {
            Issue.record("HEAD did not match GET")
            return
        }
        #expect(route.method == "GET")
        guard case .methodNotAllowed(let allowed) = router().resolve(method: "PUT", path: "/apps/7") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allowed) == ["GET", "DELETE", "HEAD", "OPTIONS"])
    }

    @Test func unmatchedPathsAreNotFound() {
        for path in ["/apps", "/apps/", "/apps/7/x", "/", "/apps//", "/apps/%zz"] {
            if case .notFound = router().resolve(method: "GET", path: path) {
            } else {
                Issue.record("\(path) should be 404")
            }
        }
    }
}
