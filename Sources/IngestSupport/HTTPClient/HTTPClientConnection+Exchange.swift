import Foundation

extension HTTPClientConnection {
    /// Largest response head (status line and header fields) accepted.
    package static let maxHeadBytes = 64 * 1024

    /// Sends `message` (a request head from
    /// ``requestHead(method:target:host:headers:bodyCount:)`` followed by
    /// its body) and reads the answer, whatever its framing. `timeout`
    /// bounds each wait for the socket (sending, then reading), like
    /// `URLRequest.timeoutInterval`. `isHead` says the request was `HEAD`
    /// (its answer has no body).
    ///
    /// - Throws: ``HTTPClientError``; ``receivedInExchange`` then says
    ///   whether the server had sent any byte of an answer.
    package func exchange(
        _ message: [UInt8], isHead: Bool = false, timeout: Double,
        maxBodyBytes: Int = Int.max
    ) throws(HTTPClientError) -> HTTPClientResponse {
        receivedInExchange = 0
        if position == input.count {
            input.removeAll(keepingCapacity: true)
            position = 0
        }
        let written = message.withUnsafeBytes { bytes in
            Result { () throws(HTTPClientError) in try write(bytes, timeout: timeout) }
        }
        try written.get()
        return try readAnswer(isHead: isHead, timeout: timeout, maxBodyBytes: maxBodyBytes)
    }

    /// The request line and header fields, ending with the empty line.
    /// `Host` and `Content-Length` are set here (a `bodyCount` of nil sends
    /// `Content-Length: 0` for `POST`, `PUT` and `PATCH`, nothing otherwise);
    /// those and `Transfer-Encoding`/`Connection` in `headers` are ignored.
    ///
    /// - Throws: ``HTTPClientError`` `.invalidRequest` for a field with CR,
    ///   LF or an invalid name (header injection).
    package static func requestHead(
        method: String, target: String, host: String, headers: [String: String] = [:],
        bodyCount: Int? = nil
    ) throws(HTTPClientError) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers {
            let lowered = name.lowercased()
            if lowered == "host" || lowered == "content-length" || lowered == "transfer-encoding" || lowered == "connection" { continue }
            guard !name.isEmpty, !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" || $0 == " " }),
                !value.contains(where: { $0 == "\r" || $0 == "\n" })
            else {
                throw HTTPClientError(
                    .invalidRequest,
                    "header field \(name.debugDescription) cannot be sent: it contains a line break or an invalid character")
            }
            text += "\(name): \(value)\r\n"
        }
        if let bodyCount {
            text += "Content-Length: \(bodyCount)\r\n"
        } else {
            let method = method.uppercased()
            if method == "POST" || method == "PUT" || method == "PATCH" { text += "Content-Length: 0\r\n" }
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    // MARK: Reading the answer

    private func readAnswer(isHead: Bool, timeout: Double, maxBodyBytes: Int) throws(HTTPClientError) -> HTTPClientResponse {
        while true {
            let head = try readHead(timeout: timeout)
            // Interim answers (100 Continue, 102, 103) precede the real one.
            if (100..<200).contains(head.status) && head.status != 101 { continue }
            if head.status == 101 {
                throw HTTPClientError(.invalidResponse, "\(name) switched protocols (101) though no upgrade was asked for")
            }
            var keepAlive = head.keepAlive
            let body: [UInt8]
            if isHead || head.status == 204 || head.status == 304 {
                body = []
            } else if head.chunked {
                body = try readChunkedBody(timeout: timeout, maxBodyBytes: maxBodyBytes)
            } else if let length = head.contentLength {
                guard length <= maxBodyBytes else {
                    throw HTTPClientError(
                        .invalidResponse, "the answer of \(name) announces \(length) bytes, more than the limit of \(maxBodyBytes)")
                }
                body = try readExactly(length, timeout: timeout, what: "the body")
            } else {
                body = try readUntilEnd(timeout: timeout, maxBodyBytes: maxBodyBytes)
                keepAlive = false
            }
            if position != input.count { keepAlive = false }  // stray bytes after the answer
            return HTTPClientResponse(status: head.status, headers: head.headers, body: body, keepAlive: keepAlive)
        }
    }

    private struct Head {
        var status: Int
        var headers: [String: String]
        var keepAlive: Bool
        var chunked: Bool
        var contentLength: Int?
    }

    private func readHead(timeout: Double) throws(HTTPClientError) -> Head {
        var searchFrom = position
        var end = -1
        while true {
            var index = searchFrom
            while index + 3 < input.count {
                if input[index] == 13 && input[index + 1] == 10 && input[index + 2] == 13 && input[index + 3] == 10 {
                    end = index
                    break
                }
                index += 1
            }
            if end >= 0 { break }
            searchFrom = max(position, input.count - 3)
            if input.count - position > Self.maxHeadBytes {
                throw HTTPClientError(.invalidResponse, "the answer head of \(name) exceeds \(Self.maxHeadBytes) bytes")
            }
            guard try fill(timeout: timeout) else {
                throw HTTPClientError(
                    .connectionClosed,
                    receivedInExchange == 0
                        ? "\(name) closed the connection without answering"
                        : "\(name) closed the connection in the middle of the answer head")
            }
        }
        let text = String(decoding: input[position..<end], as: UTF8.self)
        position = end + 4
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { throw HTTPClientError(.invalidResponse, "empty answer head from \(name)") }
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw HTTPClientError(
                .invalidResponse, "\(name) answered with an invalid status line \(String(statusLine.prefix(100)).debugDescription)")
        }
        let http10 = parts[0] == "HTTP/1.0"
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw HTTPClientError(.invalidResponse, "\(name) sent an invalid header line \(String(line.prefix(100)).debugDescription)")
            }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let existing = headers[name] { headers[name] = existing + ", " + value } else { headers[name] = value }
        }
        let connection = Set(
            (headers["connection"] ?? "").lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let keepAlive = http10 ? connection.contains("keep-alive") : !connection.contains("close")
        let codings = (headers["transfer-encoding"] ?? "").lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let chunked = codings.last == "chunked"
        if !codings.isEmpty && !chunked {
            throw HTTPClientError(
                .invalidResponse, "\(name) sent a body with transfer coding \(codings.joined(separator: ", ")), which is not supported")
        }
        var contentLength: Int?
        if !chunked, let field = headers["content-length"] {
            // Repeated fields must agree ("5, 5"); anything else is ambiguous.
            let values = Set(field.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            guard values.count == 1, let only = values.first, !only.isEmpty, only.allSatisfy(\.isASCII),
                only.allSatisfy(\.isNumber), let length = Int(only)
            else {
                throw HTTPClientError(.invalidResponse, "\(name) sent an invalid Content-Length \(field.debugDescription)")
            }
            contentLength = length
        }
        return Head(status: status, headers: headers, keepAlive: keepAlive, chunked: chunked, contentLength: contentLength)
    }

    private func readExactly(_ count: Int, timeout: Double, what: String) throws(HTTPClientError) -> [UInt8] {
        while input.count - position < count {
            guard try fill(timeout: timeout) else {
                throw HTTPClientError(
                    .connectionClosed, "\(name) closed the connection after \(input.count - position) of \(count) bytes of \(what)")
            }
        }
        let bytes = Array(input[position..<(position + count)])
        position += count
        return bytes
    }

    /// One line ending in CRLF (without it), at most 8 KiB.
    private func readLine(timeout: Double) throws(HTTPClientError) -> Substring {
        var scanned = position
        while true {
            var index = scanned
            while index + 1 < input.count {
                if input[index] == 13 && input[index + 1] == 10 {
                    let line = String(decoding: input[position..<index], as: UTF8.self)
                    position = index + 2
                    return Substring(line)
                }
                index += 1
            }
            scanned = max(position, input.count - 1)
            if input.count - position > 8 * 1024 {
                throw HTTPClientError(.invalidResponse, "a chunk-size line from \(name) exceeds 8 KiB")
            }
            guard try fill(timeout: timeout) else {
                throw HTTPClientError(.connectionClosed, "\(name) closed the connection in the middle of a chunked body")
            }
        }
    }

    private func readChunkedBody(timeout: Double, maxBodyBytes: Int) throws(HTTPClientError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine(timeout: timeout)
            let sizeText =
                line.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !sizeText.isEmpty, sizeText.count <= 16, let size = Int(sizeText, radix: 16), size >= 0 else {
                throw HTTPClientError(.invalidResponse, "\(name) sent an invalid chunk size \(String(line.prefix(40)).debugDescription)")
            }
            if size == 0 {
                // Trailer fields until an empty line; ignored.
                while try !readLine(timeout: timeout).isEmpty {}
                return body
            }
            guard body.count + size <= maxBodyBytes else {
                throw HTTPClientError(.invalidResponse, "the chunked answer of \(name) exceeds the limit of \(maxBodyBytes) bytes")
            }
            body += try readExactly(size, timeout: timeout, what: "a chunk")
            guard try readLine(timeout: timeout).isEmpty else {
                throw HTTPClientError(.invalidResponse, "a chunk from \(name) is longer than its size says")
            }
        }
    }

    private func readUntilEnd(timeout: Double, maxBodyBytes: Int) throws(HTTPClientError) -> [UInt8] {
        while try fill(timeout: timeout) {
            if input.count - position > maxBodyBytes {
                throw HTTPClientError(.invalidResponse, "the answer of \(name) exceeds the limit of \(maxBodyBytes) bytes")
            }
        }
        let bytes = Array(input[position...])
        position = input.count
        return bytes
    }
}
