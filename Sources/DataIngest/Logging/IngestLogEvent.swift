import Foundation
import IngestCore

/// One log event, as ``IngestLogHandler`` and ``IngestLogger`` record it: an
/// upload-only object in the server's `LogEvent` collection (a table in
/// SQLite). The Swift class is `IngestLogEvent` so that it does not collide
/// with swift-log's `LogEvent` in a file that imports both; the collection
/// keeps its name (``className()``).
///
/// ```sql
/// SELECT datetime(timestamp / 1000, 'unixepoch'), level, label, message,
///        json_extract(metadata, '$.request_id'), json_extract(error, '$.type')
/// FROM LogEvent WHERE level IN ('error', 'critical') ORDER BY timestamp DESC LIMIT 20;
/// ```
///
/// Like every ``AsymmetricObject`` it cannot be read back on the device.
public final class IngestLogEvent: AsymmetricObject {
    /// A fresh id per event (ObjectIds sort by creation time).
    @Persisted(primaryKey: true) public var _id: ObjectId
    /// When the log call was made.
    @Persisted public var timestamp: Date
    /// The level's name: `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`.
    @Persisted public var level: String
    /// The logger's label (e.g. `com.example.api`).
    @Persisted public var label: String
    /// The message.
    @Persisted public var message: String
    /// The merged metadata (logger, provider, call) as an embedded document,
    /// or null when there was none. Keys containing `.` or starting with `$`
    /// (not allowed in documents) have those characters replaced by `_`.
    @Persisted public var metadata: AnyRealmValue
    /// The source module (by default the first component of `#fileID`).
    @Persisted public var source: String
    /// `#fileID` of the call.
    @Persisted public var file: String
    /// `#function` of the call.
    @Persisted public var function: String
    /// `#line` of the call.
    @Persisted public var line: Int
    /// The host name of the machine.
    @Persisted public var host: String
    /// The process id.
    @Persisted public var pid: Int
    /// The app version from ``LogWriter/Configuration/appVersion``.
    @Persisted public var appVersion: String
    /// The error passed to a swift-log call (`logger.error("…", error: e)`),
    /// as an embedded document `{type, message}`: the error's type
    /// (`String(reflecting:)`) and its text (`String(describing:)`); absent
    /// (null) without one.
    @Persisted public var error: AnyRealmValue

    /// The server's collection: `LogEvent`.
    public override class func className() -> String { "LogEvent" }
}
