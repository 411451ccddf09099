import Foundation
import IngestSupport

/// A client's WebSocket upgrade request (RFC 6455, section 4.2.1), checked:
/// a `GET` with `Upgrade: websocket`, `Connection: Upgrade`,
/// `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 base64-encoded
/// bytes. The HTTP layer parses the request; this type reads only its method
/// and headers, so it works with any HTTP server.
///
/// ```swift
/// let upgrade = try WebSocketUpgradeRequest(method: "GET", headers: request.headers)
/// let chosen = WebSocketHandshake.chooseSubprotocol(offered: upgrade.subprotocols) { name in
///     name == "chat.v2" ? 2 : nil
/// }
/// socket.write(WebSocketHandshake.response(for: upgrade, subprotocol: chosen))
/// ```
public struct WebSocketUpgradeRequest: Sendable, Hashable {
    /// The `Sec-WebSocket-Key` value, as sent.
    public var key: String
    /// The subprotocols offered in `Sec-WebSocket-Protocol` (all such headers,
    /// comma-separated lists split and trimmed), in the client's order.
    public var subprotocols: [String]

    /// Checks an upgrade request.
    /// - Parameters:
    ///   - method: the request method (must be `GET`).
    ///   - headers: the request headers, names in any case.
    /// - Throws: ``WebSocketError`` with code `badHandshake` (answer 400) or
    ///   `unsupportedVersion` (answer 426 with `Sec-WebSocket-Version: 13`).
    public init(method: String, headers: [(name: String, value: String)]) throws(WebSocketError) {
        func bad(_ message: String) -> WebSocketError {
            WebSocketError(.badHandshake, closeCode: .protocolError, message: message)
        }
        guard method == "GET" else { throw bad("a WebSocket upgrade must be a GET request, not \(method)") }
        var key: String?
        var version: String?
        var upgrade = false
        var connectionUpgrade = false
        var protocols: [String] = []
        for (name, value) in headers {
            switch name.lowercased() {
            case "upgrade":
                upgrade = upgrade || Self.tokens(value).contains { $0.lowercased() == "websocket" }
            case "connection":
                connectionUpgrade = connectionUpgrade || Self.tokens(value).contains { $0.lowercased() == "upgrade" }
            case "sec-websocket-key":
                guard key == nil else { throw bad("more than one Sec-WebSocket-Key header") }
                key = value.trimmingCharacters(in: .whitespaces)
            case "sec-websocket-version":
                guard version == nil else { throw bad("more than one Sec-WebSocket-Version header") }
                version = value.trimmingCharacters(in: .whitespaces)
            case "sec-websocket-protocol":
                protocols.append(contentsOf: Self.tokens(value))
            default:
                continue
            }
        }
        guard upgrade else { throw bad("the request has no 'Upgrade: websocket' header") }
        guard connectionUpgrade else { throw bad("the request has no 'Connection: Upgrade' header") }
        guard let version else { throw bad("the request has no Sec-WebSocket-Version header") }
        guard version == "13" else {
            throw WebSocketError(
                .unsupportedVersion, closeCode: .protocolError,
                message: "WebSocket version \(version) is not supported; use 13")
        }
        guard let key, let decoded = Base64.decode(key), decoded.count == 16 else {
            throw bad("Sec-WebSocket-Key must be 16 bytes in base64")
        }
        self.key = key
        self.subprotocols = protocols
    }

    /// A comma-separated header value's elements, trimmed, empty ones dropped.
    static func tokens(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// The server's half of the opening handshake: the `Sec-WebSocket-Accept`
/// value, the subprotocol choice and the `101 Switching Protocols` answer.
///
/// ```swift
/// WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==")  // "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
/// ```
public enum WebSocketHandshake {
    /// The GUID that RFC 6455 appends to the client's key.
    public static let keyGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`: the base64
    /// SHA-1 of the key followed by ``keyGUID``.
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(Crypto.sha1(Array((key + keyGUID).utf8)))
    }

    /// The offered subprotocol with the highest rank; `rank` returns nil for
    /// one the server does not support. Nil when none is supported (then the
    /// answer carries no `Sec-WebSocket-Protocol`, or the server refuses).
    public static func chooseSubprotocol(offered: [String], rank: (String) -> Int?) -> String? {
        var best: (name: String, rank: Int)?
        for name in offered {
            guard let value = rank(name) else { continue }
            if best == nil || value > best!.rank { best = (name, value) }
        }
        return best?.name
    }

    /// The headers of the `101` answer: `Upgrade`, `Connection`,
    /// `Sec-WebSocket-Accept` and, when one was chosen, `Sec-WebSocket-Protocol`.
    public static func responseHeaders(
        for request: WebSocketUpgradeRequest, subprotocol: String?
    ) -> [(name: String, value: String)] {
        var headers = [
            (name: "Upgrade", value: "websocket"),
            (name: "Connection", value: "Upgrade"),
            (name: "Sec-WebSocket-Accept", value: acceptValue(forKey: request.key)),
        ]
        if let subprotocol { headers.append((name: "Sec-WebSocket-Protocol", value: subprotocol)) }
        return headers
    }

    /// The whole `HTTP/1.1 101 Switching Protocols` answer, ready to write.
    public static func response(for request: WebSocketUpgradeRequest, subprotocol: String?) -> [UInt8] {
        var text = "HTTP/1.1 101 Switching Protocols\r\n"
        for (name, value) in responseHeaders(for: request, subprotocol: subprotocol) {
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }
}
