/// The Flexible Sync protocol versions and their WebSocket subprotocol
/// names (`com.mongodb.realm-query-sync#14`).
///
/// ```swift
/// let offered = upgrade.subprotocols   // the client's Sec-WebSocket-Protocol list
/// if let chosen = SyncProtocolVersion.choose(offered: offered) { print(chosen.name, chosen.version) }
/// ```
public enum SyncProtocolVersion {
    /// The subprotocol prefix of Flexible Sync.
    public static let subprotocolPrefix = "com.mongodb.realm-query-sync#"
    /// The version this library speaks: 14, the one realm-core 14 (every
    /// current SDK) uses.
    public static let current = 14
    /// The versions this library serves by default.
    public static let supported: ClosedRange<Int> = 14...14

    /// The subprotocol name of `version`.
    public static func subprotocol(version: Int) -> String { subprotocolPrefix + String(version) }

    /// The version a subprotocol name carries, or nil when it is not a
    /// Flexible Sync name.
    public static func version(ofSubprotocol name: String) -> Int? {
        guard name.hasPrefix(subprotocolPrefix) else { return nil }
        let digits = name.dropFirst(subprotocolPrefix.count)
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(digits)
    }

    /// The highest offered version within `supported`, with its name; nil
    /// when the client offers none of them.
    public static func choose(offered: [String], supported: ClosedRange<Int> = supported) -> (name: String, version: Int)? {
        let name = WebSocketHandshake.chooseSubprotocol(offered: offered) { name in
            version(ofSubprotocol: name).flatMap { supported.contains($0) ? $0 : nil }
        }
        return name.flatMap { name in version(ofSubprotocol: name).map { (name, $0) } }
    }
}
