import DataIngest
import Foundation

/// One forwarded line: an upload-only object in the server's `ForwardedLine`
/// collection.
///
/// `_id` is `<source id>:<byte offset>`: the source id names one generation
/// of one file (a new id after truncation) and is kept in the file's cursor,
/// which is committed with the lines (``FileCursor``). A restart resumes after
/// the last committed line, so no line is committed twice; were one replayed
/// anyway, it would have the same id and the server would keep it once.
final class ForwardedLine: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: String
    /// The file path, or `-` for standard input.
    @Persisted var source: String
    /// Where the line starts in its file (0 for standard input lines' first
    /// byte); of a multiline event or joined container message, where its
    /// first line or part starts.
    @Persisted var offset: Int
    /// The host the forwarder runs on.
    @Persisted var host: String
    /// When the forwarder read the line.
    @Persisted var receivedAt: Date
    /// `plain`, `json`, `rfc3164`, `rfc5424`, `docker` or `cri`.
    @Persisted var format: String
    /// The message: the whole line (plain), the `message`/`msg` field (JSON),
    /// the MSG part (syslog), the joined parts (docker, cri).
    @Persisted var message: String
    /// The time the line itself carries (JSON `timestamp`/`time`/`ts`, syslog
    /// header, the container runtime's time of the first part), if any.
    @Persisted var timestamp: Date?
    /// The severity (JSON `level`/`severity`; syslog severity name), if any.
    @Persisted var level: String?
    /// Parsed fields: the JSON object, the syslog header fields (facility,
    /// severity, hostname, appName, procId, msgId, structuredData), or of a
    /// container line `stream` (`stdout`, `stderr`) and `partial` (true
    /// only when the message was sent without all its parts).
    @Persisted var fields: AnyRealmValue
}
