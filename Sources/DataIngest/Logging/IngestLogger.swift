#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A logger shaped like swift-log's `Logger`, whose events go to the ingest
/// server: each enabled call records a ``LogEvent`` through a ``LogWriter``,
/// which keeps it on disk until the server has it.
///
/// ```swift
/// let user = try await app.login(credentials: .anonymous)
/// let writer = try LogWriter(user: user)
/// var logger = IngestLogger(label: "com.example.api", writer: writer)
/// logger.logLevel = .debug
/// logger[metadataKey: "region"] = "eu-1"
/// logger.info("started", metadata: ["port": "8080"])
/// logger.error("payment failed: \(error)")
/// writer.shutdown()                       // at exit: commits what is queued
/// ```
///
/// A call never blocks on I/O: the event goes into the writer's bounded
/// in-memory queue and a background thread commits queued events in groups.
/// When the queue is full the writer's ``LogWriter/Configuration/whenFull``
/// policy applies and ``LogWriter/Statistics/droppedEvents`` counts what
/// was dropped. A call below ``logLevel`` costs one comparison: neither the
/// message nor the metadata is evaluated.
public struct IngestLogger: Sendable {
    /// The severity of an event, lowest first (swift-log's levels).
    public enum Level: String, Sendable, Hashable, CaseIterable, Comparable, Codable {
        case trace, debug, info, notice, warning, error, critical

        @usableFromInline var rank: Int {
            switch self {
            case .trace: 0
            case .debug: 1
            case .info: 2
            case .notice: 3
            case .warning: 4
            case .error: 5
            case .critical: 6
            }
        }

        @inlinable
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// The logger's label, stored with every event (e.g. `com.example.api`).
    public let label: String
    /// Events below this level are ignored. Default `.info`.
    public var logLevel: Level = .info
    /// Metadata added to every event of this logger.
    public var metadata: Metadata = [:]
    /// Context metadata added at each enabled call. Default none.
    public var metadataProvider: MetadataProvider?
    /// Where the events go.
    public let writer: LogWriter

    /// A logger named `label` writing through `writer`.
    public init(label: String, writer: LogWriter, metadataProvider: MetadataProvider? = nil) {
        self.label = label
        self.writer = writer
        self.metadataProvider = metadataProvider
    }

    /// Reads or sets one metadata entry of this logger.
    public subscript(metadataKey key: String) -> MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Records an event at `level` if it is enabled. `source` defaults to the
    /// module of `file` (the part of `#fileID` before the `/`).
    @inlinable
    public func log(level: Level, _ message: @autoclosure () -> Message,
                    metadata: @autoclosure () -> Metadata? = nil, source: @autoclosure () -> String? = nil,
                    file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard level >= logLevel else { return }
        record(level: level, message: message(), metadata: metadata(), source: source(),
               file: file, function: function, line: line)
    }

    /// Logs at `.trace` (see ``log(level:_:metadata:source:file:function:line:)``).
    @inlinable
    public func trace(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      source: @autoclosure () -> String? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logLevel <= .trace else { return }
        record(level: .trace, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// Logs at `.debug`.
    @inlinable
    public func debug(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      source: @autoclosure () -> String? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logLevel <= .debug else { return }
        record(level: .debug, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// Logs at `.info`.
    @inlinable
    public func info(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                     source: @autoclosure () -> String? = nil,
                     file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logLevel <= .info else { return }
        record(level: .info, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// Logs at `.notice`.
    @inlinable
    public func notice(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                       source: @autoclosure () -> String? = nil,
                       file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logLevel <= .notice else { return }
        record(level: .notice, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// Logs at `.warning`.
    @inlinable
    public func warning(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                        source: @autoclosure () -> String? = nil,
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logLevel <= .warning else { return }
        record(level: .warning, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// Logs at `.error`.
    @inlinable
    public func error(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      source: @autoclosure () -> String? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logLevel <= .error else { return }
        record(level: .error, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// Logs at `.critical` (never filtered out by ``logLevel``).
    @inlinable
    public func critical(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                         source: @autoclosure () -> String? = nil,
                         file: String = #fileID, function: String = #function, line: UInt = #line) {
        record(level: .critical, message: message(), metadata: metadata(), source: source(), file: file, function: function, line: line)
    }

    /// The enabled path: merges metadata and hands the event to the writer.
    @usableFromInline
    func record(level: Level, message: Message, metadata call: Metadata?, source: String?,
                file: String, function: String, line: UInt) {
        var merged = self.metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, new in new }
        }
        if let call, !call.isEmpty {
            if merged.isEmpty { merged = call } else { merged.merge(call) { _, new in new } }
        }
        // The wall clock read directly (Date() goes through two more layers).
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        // Moved into the queue, not copied: no retain and release of each string.
        writer.enqueue(PendingLogEvent(
            timestamp: Date(timeIntervalSince1970: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9),
            level: level, label: label, message: message.description, metadata: merged,
            source: source, file: file, function: function, line: line))
    }
}

/// A log call's data on its way to the writer thread.
struct PendingLogEvent: Sendable {
    var timestamp: Date
    var level: IngestLogger.Level
    var label: String
    var message: String
    var metadata: IngestLogger.Metadata
    var source: String?
    var file: String
    var function: String
    var line: UInt
}
