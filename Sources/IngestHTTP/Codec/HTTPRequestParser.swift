/// Incremental HTTP/1.1 request parser (RFC 9112), one per connection.
///
/// Bytes go in with ``append(_:)``; ``next()`` yields the next event: need
/// more data, send `100 Continue`, a complete request, or a protocol error
/// (after which the connection must be closed). Pipelined requests are
/// yielded one at a time, in order.
///
/// The parser is strict where leniency enables request smuggling: bare LF,
/// obs-fold, whitespace before the colon, `Transfer-Encoding` together with
/// `Content-Length`, differing `Content-Length` values and `Transfer-Encoding`
/// in HTTP/1.0 are all rejected with 400.
struct HTTPRequestParser {
    /// The limits the parser enforces.
    struct Limits: Sendable {
        /// Maximum size of the request line plus header fields (431 above it;
        /// 414 if the request line alone exceeds it). Also bounds chunked trailers.
        var maxHeaderBytes: Int
        /// Maximum number of header fields (431 above it).
        var maxHeaderCount: Int
        /// Maximum body size after de-chunking (413 above it).
        var maxBodyBytes: Int
    }

    /// What the caller should do next.
    enum Event {
        /// The buffered bytes hold no complete request yet.
        case needMoreData
        /// The request expects `100 Continue` before its body; send it, then call `next()` again.
        case expectContinue
        /// A complete request and whether the connection may stay open after it.
        case request(HTTPRequest, keepAlive: Bool)
        /// The request is malformed or over a limit; answer and close.
        case error(HTTPError)
    }

    /// Which part of a request is being received (drives the timeouts).
    enum Phase: Equatable {
        /// No byte of the next request has arrived.
        case idle
        /// Receiving the request line and header fields.
        case head
        /// Receiving the body.
        case body
    }

    private enum State {
        case head
        case contentBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(consumed: Int)
        case failed(HTTPError)
    }

    private static let maxChunkLineBytes = 4096
    private static let maxLeadingEmptyLines = 8

    let limits: Limits
    private var buffer: [UInt8] = []
    private var index = 0
    private var state = State.head
    // Head scanning progress, relative to `index` so compaction may move bytes.
    private var headScanned = 0
    private var headLineStart = 0
    private var sawRequestLine = false
    private var leadingEmptyLines = 0
    // The request whose body is being read.
    private var pending: HTTPRequest?
    private var pendingKeepAlive = true
    private var body: [UInt8] = []

    init(limits: Limits) {
        self.limits = limits
    }

    /// Which part of a request is being received.
    var phase: Phase {
        switch state {
        case .head: (buffer.count > index || sawRequestLine) ? .head : .idle
        case .failed: .idle
        default: .body
        }
    }

    /// Whether unparsed bytes are buffered.
    var hasBufferedBytes: Bool { buffer.count > index }

    /// Removes and returns the bytes received after the last complete
    /// request: after a protocol upgrade they belong to the new protocol.
    mutating func takeBufferedBytes() -> [UInt8] {
        let rest = Array(buffer[index...])
        buffer = []
        index = 0
        return rest
    }

    /// Appends received bytes.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends received bytes.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Drops consumed bytes so the buffer does not grow with the connection's lifetime.
    private mutating func compact() {
        if index == 0 { return }
        if index == buffer.count {
            if buffer.capacity > 1 << 20 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
            index = 0
        } else if index >= 1 << 16 {
            buffer.removeSubrange(0..<index)
            index = 0
        }
    }

    /// Parses as far as the buffered bytes allow and returns the next event.
    mutating func next() -> Event {
        while true {
            switch state {
            case .failed(let error):
                return .error(error)
            case .head:
                switch parseHead() {
                case .needMore: return .needMoreData
                case .fail(let error): return fail(error)
                case .done(let request, let keepAlive, let framing, let expectContinue):
                    switch framing {
                    case .none:
                        return finish(request, keepAlive: keepAlive)
                    case .length(let n):
                        pending = request
                        pendingKeepAlive = keepAlive
                        body = []
                        body.reserveCapacity(min(n, 1 << 20))
                        state = .contentBody(remaining: n)
                    case .chunked:
                        pending = request
                        pendingKeepAlive = keepAlive
                        body = []
                        state = .chunkSize
                    }
                    if expectContinue && !hasBufferedBytes { return .expectContinue }
                }
            case .contentBody(let remaining):
                let n = min(remaining, buffer.count - index)
                if n > 0 {
                    body.append(contentsOf: buffer[index..<(index + n)])
                    index += n
                }
                if remaining == n { return finishPending() }
                state = .contentBody(remaining: remaining - n)
                compact()
                return .needMoreData
            case .chunkSize:
                guard let lf = findLF(from: index, limit: Self.maxChunkLineBytes) else {
                    if buffer.count - index > Self.maxChunkLineBytes {
                        return fail(bad("A chunk-size line is longer than \(Self.maxChunkLineBytes) bytes."))
                    }
                    return .needMoreData
                }
                guard lf > index, buffer[lf - 1] == cr else {
                    return fail(bad("A chunk-size line does not end with CRLF."))
                }
                var size = 0
                var i = index
                while i < lf - 1, let digit = hexValue(buffer[i]) {
                    size = size &* 16 &+ Int(digit)
                    if size > limits.maxBodyBytes || size < 0 {
                        return fail(tooLarge())
                    }
                    i += 1
                }
                guard i > index else { return fail(bad("A chunk size is not a hexadecimal number.")) }
                guard validChunkExtensions(from: i, to: lf - 1) else {
                    return fail(bad("A chunk extension is malformed."))
                }
                index = lf + 1
                if size == 0 {
                    state = .trailers(consumed: 0)
                } else if body.count + size > limits.maxBodyBytes {
                    return fail(tooLarge())
                } else {
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let n = min(remaining, buffer.count - index)
                if n > 0 {
                    body.append(contentsOf: buffer[index..<(index + n)])
                    index += n
                }
                if remaining == n {
                    state = .chunkDataEnd
                } else {
                    state = .chunkData(remaining: remaining - n)
                    compact()
                    return .needMoreData
                }
            case .chunkDataEnd:
                if buffer.count - index < 2 { return .needMoreData }
                guard buffer[index] == cr, buffer[index + 1] == lf else {
                    return fail(bad("Chunk data is not followed by CRLF; the chunk size does not match the data."))
                }
                index += 2
                state = .chunkSize
            case .trailers(let consumed):
                guard let lfIndex = findLF(from: index, limit: limits.maxHeaderBytes) else {
                    if consumed + buffer.count - index > limits.maxHeaderBytes {
                        return fail(
                            HTTPError(
                                .requestHeaderFieldsTooLarge, code: .headersTooLarge,
                                "The chunked trailer section is larger than \(limits.maxHeaderBytes) bytes."))
                    }
                    return .needMoreData
                }
                guard lfIndex > index, buffer[lfIndex - 1] == cr else {
                    return fail(bad("A trailer line does not end with CRLF."))
                }
                if lfIndex - 1 == index {
                    index = lfIndex + 1
                    return finishPending()
                }
                // Trailer fields are validated like header fields, then ignored.
                let valid = buffer.withUnsafeBufferPointer {
                    Self.parseFieldLine(UnsafeBufferPointer(rebasing: $0[index..<(lfIndex - 1)])) != nil
                }
                guard valid else { return fail(bad("A trailer field is malformed.")) }
                let total = consumed + (lfIndex + 1 - index)
                if total > limits.maxHeaderBytes {
                    return fail(
                        HTTPError(
                            .requestHeaderFieldsTooLarge, code: .headersTooLarge,
                            "The chunked trailer section is larger than \(limits.maxHeaderBytes) bytes."))
                }
                index = lfIndex + 1
                state = .trailers(consumed: total)
            }
        }
    }

    // MARK: Completing requests

    private mutating func finishPending() -> Event {
        guard var request = pending else { return fail(bad("Internal parser state error.")) }
        request.body = body
        body = []
        pending = nil
        return finish(request, keepAlive: pendingKeepAlive)
    }

    private mutating func finish(_ request: HTTPRequest, keepAlive: Bool) -> Event {
        state = .head
        headScanned = 0
        headLineStart = 0
        sawRequestLine = false
        leadingEmptyLines = 0
        compact()
        return .request(request, keepAlive: keepAlive)
    }

    private mutating func fail(_ error: HTTPError) -> Event {
        state = .failed(error)
        pending = nil
        body = []
        return .error(error)
    }

    private func bad(_ message: String) -> HTTPError {
        HTTPError(.badRequest, code: .badRequest, message)
    }

    private func tooLarge() -> HTTPError {
        HTTPError(
            .contentTooLarge, code: .bodyTooLarge,
            "The request body is larger than the server's limit of \(limits.maxBodyBytes) bytes; send it in smaller parts.")
    }

    private func findLF(from start: Int, limit: Int) -> Int? {
        let end = min(buffer.count, start + limit + 2)
        var i = start
        while i < end {
            if buffer[i] == lf { return i }
            i += 1
        }
        return nil
    }

    // MARK: Head

    private enum Framing {
        case none
        case length(Int)
        case chunked
    }

    private enum HeadResult {
        case needMore
        case fail(HTTPError)
        case done(HTTPRequest, keepAlive: Bool, framing: Framing, expectContinue: Bool)
    }

    private mutating func parseHead() -> HeadResult {
        var i = index + headScanned
        while i < buffer.count {
            if buffer[i] != lf {
                i += 1
                continue
            }
            let lineStart = index + headLineStart
            guard i > lineStart, buffer[i - 1] == cr else {
                return .fail(bad("A line in the request head ends with a bare LF; lines must end with CRLF."))
            }
            if i - 1 == lineStart {
                if !sawRequestLine {
                    // RFC 9112 §2.2: ignore empty lines before the request line.
                    leadingEmptyLines += 1
                    if leadingEmptyLines > Self.maxLeadingEmptyLines {
                        return .fail(bad("The request starts with too many empty lines."))
                    }
                    index = i + 1
                    headLineStart = 0
                    headScanned = 0
                    i = index
                    continue
                }
                let headEnd = i + 1
                if headEnd - index > limits.maxHeaderBytes { return .fail(headersTooLarge()) }
                let result = buffer.withUnsafeBufferPointer {
                    parseHeadLines(UnsafeBufferPointer(rebasing: $0[index..<lineStart]))
                }
                index = headEnd
                return result
            }
            if !sawRequestLine && i + 1 - index > limits.maxHeaderBytes { return .fail(uriTooLong()) }
            sawRequestLine = true
            headLineStart = i + 1 - index
            i += 1
        }
        headScanned = i - index
        if buffer.count - index > limits.maxHeaderBytes {
            return .fail(sawRequestLine ? headersTooLarge() : uriTooLong())
        }
        return .needMore
    }

    private func uriTooLong() -> HTTPError {
        HTTPError(
            .uriTooLong, code: .uriTooLong,
            "The request line is longer than the server's limit of \(limits.maxHeaderBytes) bytes.")
    }

    private func headersTooLarge() -> HTTPError {
        HTTPError(
            .requestHeaderFieldsTooLarge, code: .headersTooLarge,
            "The request head is larger than the server's limit of \(limits.maxHeaderBytes) bytes or \(limits.maxHeaderCount) fields.")
    }

    /// Parses the request line and header fields (`head` holds the lines
    /// without the final empty line; each line ends with CRLF).
    private func parseHeadLines(_ head: UnsafeBufferPointer<UInt8>) -> HeadResult {
        var lines: [UnsafeBufferPointer<UInt8>] = []
        var start = 0
        var i = 0
        while i < head.count {
            if head[i] == lf {
                lines.append(UnsafeBufferPointer(rebasing: head[start..<(i - 1)]))
                start = i + 1
            }
            i += 1
        }
        guard let requestLine = lines.first else { return .fail(bad("The request line is missing.")) }

        // request-line = method SP request-target SP HTTP-version
        guard let sp1 = requestLine.firstIndex(of: sp),
            let sp2 = requestLine[(sp1 + 1)...].firstIndex(of: sp)
        else { return .fail(bad("The request line is not `METHOD target HTTP/1.1`.")) }
        let methodBytes = requestLine[0..<sp1]
        let targetBytes = requestLine[(sp1 + 1)..<sp2]
        let versionBytes = requestLine[(sp2 + 1)...]
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(isTokenChar) else {
            return .fail(bad("The request method is not a valid token."))
        }
        guard !targetBytes.isEmpty, targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .fail(bad("The request target is empty or contains spaces or control characters."))
        }
        let version: HTTPVersion
        switch Self.parseVersion(versionBytes) {
        case .invalid:
            return .fail(bad("The HTTP version on the request line is malformed."))
        case .unsupported(let text):
            return .fail(
                HTTPError(
                    .httpVersionNotSupported, code: .versionNotSupported,
                    "\(text) is not supported; use HTTP/1.1 or HTTP/1.0."))
        case .version(let v):
            version = v
        }
        let method = String(decoding: methodBytes, as: UTF8.self)
        var target = String(decoding: targetBytes, as: UTF8.self)
        if targetBytes.first == UInt8(ascii: "/") {
            // origin-form
        } else if target == "*" {
            guard method == "OPTIONS" else { return .fail(bad("The `*` target is only valid with OPTIONS.")) }
        } else if let origin = Self.originForm(ofAbsolute: target) {
            target = origin
        } else {
            return .fail(bad("The request target must be a path starting with `/`."))
        }

        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            if let first = line.first, first == sp || first == htab {
                return .fail(bad("Header line folding (obs-fold) is not accepted; send each field on one line."))
            }
            guard let (name, value) = Self.parseFieldLine(line) else {
                return .fail(
                    bad("A header field is malformed: names are tokens followed directly by `:`, values have no control characters."))
            }
            if headers.count >= limits.maxHeaderCount { return .fail(headersTooLarge()) }
            headers.add(name: name, value: value)
        }

        let hosts = headers.values(for: "host")
        if hosts.count > 1 || (version.minor >= 1 && hosts.isEmpty) {
            return .fail(bad("An HTTP/1.1 request needs exactly one Host header."))
        }

        // Message framing, RFC 9112 §6.
        var framing = Framing.none
        let transferEncodings = headers.values(for: "transfer-encoding")
        let contentLengths = headers.values(for: "content-length")
        if !transferEncodings.isEmpty {
            if version.minor == 0 {
                return .fail(bad("Transfer-Encoding is not allowed in an HTTP/1.0 request."))
            }
            if !contentLengths.isEmpty {
                return .fail(bad("A request must not have both Transfer-Encoding and Content-Length."))
            }
            let codings = transferEncodings.flatMap { $0.split(separator: ",") }
                .map { $0.trimmingHTTPWhitespace().lowercased() }
            guard codings.last == "chunked", !codings.contains(where: \.isEmpty) else {
                return .fail(bad("The last transfer coding must be `chunked`."))
            }
            if codings.count > 1 {
                if codings.dropLast().contains("chunked") {
                    return .fail(bad("`chunked` must be applied only once."))
                }
                return .fail(
                    HTTPError(
                        .notImplemented, code: .notImplemented,
                        "Only the `chunked` transfer coding is supported, not \(codings.dropLast().joined(separator: ", "))."))
            }
            framing = .chunked
        } else if !contentLengths.isEmpty {
            var length: Int?
            for element in contentLengths.flatMap({ $0.split(separator: ",", omittingEmptySubsequences: false) }) {
                let text = element.trimmingHTTPWhitespace()
                guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let n = Int(text)
                else { return .fail(bad("Content-Length is not a decimal number.")) }
                if let length, length != n {
                    return .fail(bad("The request has differing Content-Length values."))
                }
                length = n
            }
            if let length {
                if length > limits.maxBodyBytes { return .fail(tooLarge()) }
                if length > 0 { framing = .length(length) }
            }
        }

        var expectContinue = false
        let expectations = headers.values(for: "expect")
        if !expectations.isEmpty {
            guard expectations.count == 1,
                asciiCaseInsensitiveEquals(expectations[0].trimmingHTTPWhitespace(), "100-continue")
            else {
                return .fail(
                    HTTPError(
                        .expectationFailed, code: .expectationFailed, "Only `Expect: 100-continue` is supported."))
            }
            // HTTP/1.0 clients cannot expect 100 Continue (RFC 9110 §10.1.1).
            if version.minor >= 1 {
                if case .none = framing {} else { expectContinue = true }
            }
        }

        let close = headers.containsToken("close", in: "connection")
        let keepAlive = version.minor >= 1 ? !close : (!close && headers.containsToken("keep-alive", in: "connection"))
        let request = HTTPRequest(method: method, target: target, version: version, headers: headers)
        return .done(request, keepAlive: keepAlive, framing: framing, expectContinue: expectContinue)
    }

    private enum VersionResult {
        case invalid
        case unsupported(String)
        case version(HTTPVersion)
    }

    private static func parseVersion(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> VersionResult {
        let b = Array(bytes)
        guard b.count == 8, b[0..<5].elementsEqual("HTTP/".utf8), b[6] == UInt8(ascii: "."),
            let major = decimal(b[5]), let minor = decimal(b[7])
        else { return .invalid }
        guard major == 1 else { return .unsupported("HTTP/\(major).\(minor)") }
        // RFC 9110 §2.5: a higher minor version is answered as the highest we support.
        return .version(minor == 0 ? .http1_0 : .http1_1)
    }

    private static func decimal(_ b: UInt8) -> Int? {
        (b >= 0x30 && b <= 0x39) ? Int(b - 0x30) : nil
    }

    /// The origin-form (`/path?query`) of an absolute-form target, or nil.
    private static func originForm(ofAbsolute target: String) -> String? {
        let lower = target.lowercased()
        let schemeLength: Int
        if lower.hasPrefix("http://") {
            schemeLength = 7
        } else if lower.hasPrefix("https://") {
            schemeLength = 8
        } else {
            return nil
        }
        let rest = target.utf8.dropFirst(schemeLength)
        guard let slash = rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) else {
            return rest.isEmpty ? nil : "/"
        }
        if rest[slash] == UInt8(ascii: "?") { return "/" + String(Substring(target.utf8[slash...])) }
        return String(Substring(target.utf8[slash...]))
    }

    /// Parses `name: value`; nil if the name is not a token or the value has
    /// control characters (other than HTAB).
    static func parseFieldLine(_ line: UnsafeBufferPointer<UInt8>) -> (String, String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return nil }
        let nameBytes = line[0..<colon]
        guard nameBytes.allSatisfy(isTokenChar) else { return nil }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == sp || line[start] == htab { start += 1 }
        while end > start, line[end - 1] == sp || line[end - 1] == htab { end -= 1 }
        let valueBytes = line[start..<end]
        guard valueBytes.allSatisfy({ $0 == htab || ($0 >= 0x20 && $0 != 0x7F) }) else { return nil }
        return (String(decoding: nameBytes, as: UTF8.self), String(decoding: valueBytes, as: UTF8.self))
    }

    /// Validates `*( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ) BWS`.
    private func validChunkExtensions(from start: Int, to end: Int) -> Bool {
        var i = start
        func skipBWS() { while i < end, buffer[i] == sp || buffer[i] == htab { i += 1 } }
        func token() -> Bool {
            let s = i
            while i < end, isTokenChar(buffer[i]) { i += 1 }
            return i > s
        }
        while true {
            skipBWS()
            if i == end { return true }
            guard buffer[i] == UInt8(ascii: ";") else { return false }
            i += 1
            skipBWS()
            guard token() else { return false }
            skipBWS()
            if i < end, buffer[i] == UInt8(ascii: "=") {
                i += 1
                skipBWS()
                if i < end, buffer[i] == UInt8(ascii: "\"") {
                    i += 1
                    var closed = false
                    while i < end {
                        let c = buffer[i]
                        if c == UInt8(ascii: "\"") { closed = true; i += 1; break }
                        if c == UInt8(ascii: "\\") {
                            guard i + 1 < end, buffer[i + 1] == htab || buffer[i + 1] >= 0x20, buffer[i + 1] != 0x7F
                            else { return false }
                            i += 2
                            continue
                        }
                        guard c == htab || (c >= 0x20 && c != 0x7F) else { return false }
                        i += 1
                    }
                    guard closed else { return false }
                } else {
                    guard token() else { return false }
                }
            }
        }
    }
}

private let cr = UInt8(ascii: "\r")
private let lf = UInt8(ascii: "\n")
private let sp = UInt8(ascii: " ")
private let htab = UInt8(ascii: "\t")

/// Whether `b` is a `tchar` (RFC 9110 §5.6.2): the bytes of methods, header
/// names and other tokens.
func isTokenChar(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
        UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}
