import DataIngest
import Foundation

/// One forwarded line: an upload-only object in the server's `ForwardedLine`
/// collection.
///
/// `_id` is `<source id>:<byte offset>`: the source id names one generation
/// of one file (a new id after rotation or truncation) and is saved in the
/// checkpoint before the first line of that generation is committed. Lines
/// read again after a crash therefore get the same ids, and the server keeps
/// each once.
final class ForwardedLine: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: String
    /// The file path, or `-` for standard input.
    @Persisted var source: String
    /// Where the line starts in its file (0 for standard input lines' first byte).
    @Persisted var offset: Int
    /// The host the forwarder runs on.
    @Persisted var host: String
    /// When the forwarder read the line.
    @Persisted var receivedAt: Date
    /// `plain`, `json`, `rfc3164` or `rfc5424`.
    @Persisted var format: String
    /// The message: the whole line (plain), the `message`/`msg` field (JSON),
    /// the MSG part (syslog).
    @Persisted var message: String
    /// The time the line itself carries (JSON `timestamp`/`time`/`ts`, syslog header), if any.
    @Persisted var timestamp: Date?
    /// The severity (JSON `level`/`severity`; syslog severity name), if any.
    @Persisted var level: String?
    /// Parsed fields: the JSON object, or the syslog header fields
    /// (facility, severity, hostname, appName, procId, msgId, structuredData).
    @Persisted var fields: AnyRealmValue
}
