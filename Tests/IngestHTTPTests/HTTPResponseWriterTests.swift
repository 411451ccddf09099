import Testing
@testable import IngestHTTP

/// Response serialization: framing headers owned by the server, no header
/// injection, no body where HTTP forbids one.
@Suite struct HTTPResponseWriterTests {
    func serialize(_ response: HTTPResponse, isHead: Bool = false, close: Bool = false, http10KeepAlive: Bool = false) -> String {
        var out: [UInt8] = []
        HTTPResponseWriter.write(
            response, isHead: isHead, close: close, http10KeepAlive: http10KeepAlive,
            date: "Sun, 06 Nov 1994 08:49:37 GMT", into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func framingHeadersComeFromTheServer() {
        var response = HTTPResponse.text("hello")
        response.headers.add(name: "Content-Length", value: "999")
        response.headers.add(name: "Transfer-Encoding", value: "chunked")
        response.headers.add(name: "Connection", value: "upgrade")
        #expect(
            serialize(response) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 5\r\n\r\nhello")
        #expect(serialize(response, close: true).contains("\r\nConnection: close\r\n"))
        #expect(serialize(response, http10KeepAlive: true).contains("\r\nConnection: keep-alive\r\n"))
    }

    @Test func handlerValuesCannotSplitTheResponse() {
        var response = HTTPResponse(status: .ok)
        response.headers.add(name: "X-Evil", value: "a\r\nSet-Cookie: stolen=1")
        response.headers.add(name: "Bad Name\r\n", value: "v")
        let text = serialize(response)
        #expect(!text.contains("\r\nSet-Cookie"))
        #expect(text.contains("X-Evil: a  Set-Cookie: stolen=1\r\n"))
        #expect(text.contains("X-Invalid-Header-Name: v\r\n"))
    }

    @Test func headAndNoContentHaveNoBody() {
        let head = serialize(.text("hello"), isHead: true)
        #expect(head.hasSuffix("Content-Length: 5\r\n\r\n"))
        let noContent = serialize(HTTPResponse(status: .noContent, body: Array("x".utf8)))
        #expect(!noContent.contains("Content-Length"))
        #expect(noContent.hasSuffix("\r\n\r\n"))
    }

    @Test func errorBodiesAreEscapedJSON() {
        let response = HTTPResponse.error(.badRequest, code: "bad", message: "quote \" backslash \\ newline \n tab \t bell \u{07}")
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"error":"quote \" backslash \\ newline \n tab \t bell \u0007","error_code":"bad"}"#)
    }

    @Test func httpDateIsIMFFixdate() {
        #expect(HTTPResponseWriter.httpDate(epochSeconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
