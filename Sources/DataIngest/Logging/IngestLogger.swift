#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging

/// A logger shaped like swift-log's `Logger`, whose events go to the ingest
/// server: each enabled call records an ``IngestLogEvent`` through a ``LogWriter``,
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

        // Inlinable so that a disabled call's check compiles, in the caller's
        // module, to one byte comparison (the case's tag is its rank).
        @inlinable var rank: Int {
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

    /// Events below this level are ignored. Default `.info`. The first
    /// stored property, next to one reference: the value is two words, so a
    /// disabled call reads one byte and copies nothing else.
    public var logLevel: Level = .info
    /// Everything else, immutable and shared by copies of the logger;
    /// replaced (not mutated) when a setter changes metadata or provider.
    @usableFromInline var parts: Parts

    /// The logger's label, stored with every event (e.g. `com.example.api`).
    public var label: String { parts.label }
    /// Metadata added to every event of this logger.
    public var metadata: Metadata {
        get { parts.metadata }
        set { parts = Parts(label: parts.label, metadata: newValue, metadataProvider: parts.metadataProvider, writer: parts.writer) }
    }
    /// Context metadata added at each enabled call. Default none.
    public var metadataProvider: MetadataProvider? {
        get { parts.metadataProvider }
        set { parts = Parts(label: parts.label, metadata: parts.metadata, metadataProvider: newValue, writer: parts.writer) }
    }
    /// Where the events go.
    public var writer: LogWriter { parts.writer }

    /// A logger named `label` writing through `writer`.
    public init(label: String, writer: LogWriter, metadataProvider: MetadataProvider? = nil) {
        parts = Parts(label: label, metadata: [:], metadataProvider: metadataProvider, writer: writer)
    }

    /// Reads or sets one metadata entry of this logger.
    public subscript(metadataKey key: String) -> MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Records an event at `level` if it is enabled. `source` defaults to the
    /// module of `file` (the part of `#fileID` before the `/`).
    @inlinable @_disfavoredOverload
    public func log(
        level: Level, _ message: @autoclosure () -> Message,
        metadata: @autoclosure () -> Metadata? = nil, source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard level >= logLevel else { return }
        record(
            level: level, message: message, metadata: metadata, source: source,
            file: file, function: function, line: line)
    }

    /// Logs at `.trace` (see ``log(level:_:metadata:source:file:function:line:)``).
    @inlinable @_disfavoredOverload
    public func trace(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .trace else { return }
        record(level: .trace, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// Logs at `.debug`.
    @inlinable @_disfavoredOverload
    public func debug(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .debug else { return }
        record(level: .debug, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// Logs at `.info`.
    @inlinable @_disfavoredOverload
    public func info(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .info else { return }
        record(level: .info, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// Logs at `.notice`.
    @inlinable @_disfavoredOverload
    public func notice(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .notice else { return }
        record(level: .notice, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// Logs at `.warning`.
    @inlinable @_disfavoredOverload
    public func warning(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .warning else { return }
        record(level: .warning, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// Logs at `.error`.
    @inlinable @_disfavoredOverload
    public func error(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .error else { return }
        record(level: .error, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// Logs at `.critical` (never filtered out by ``logLevel``).
    @inlinable @_disfavoredOverload
    public func critical(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        record(level: .critical, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func log(
        level: Level, _ message: @autoclosure () -> Message,
        metadata: @autoclosure () -> CallMetadata? = nil, source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard level >= logLevel else { return }
        record(
            callLevel: level, message: message, metadata: metadata, source: source,
            file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func trace(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .trace else { return }
        record(callLevel: .trace, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func debug(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .debug else { return }
        record(callLevel: .debug, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func info(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .info else { return }
        record(callLevel: .info, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func notice(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .notice else { return }
        record(callLevel: .notice, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func warning(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .warning else { return }
        record(callLevel: .warning, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func error(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard logLevel <= .error else { return }
        record(callLevel: .error, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The same, with the metadata written as a dictionary literal (``CallMetadata``).
    @inlinable
    public func critical(
        _ message: @autoclosure () -> Message, metadata: @autoclosure () -> CallMetadata? = nil,
        source: @autoclosure () -> String? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        record(callLevel: .critical, message: message, metadata: metadata, source: source, file: file, function: function, line: line)
    }

    /// The enabled path, on the caller's thread: reads the clock, evaluates
    /// the metadata provider (its context is the caller's), and moves the
    /// parts of the event to the writer's queue. Nothing is merged,
    /// formatted or encoded here: the writer thread merges the metadata,
    /// derives the source and encodes the event.
    ///
    /// The message and metadata closures are evaluated here, not in the
    /// inlined level method: the caller's code for a disabled call stays a
    /// load, a comparison and a branch.
    @usableFromInline
    func record(
        level: Level, message: () -> Message, metadata: () -> Metadata?, source: () -> String?,
        file: String, function: String, line: UInt
    ) {
        record(
            callLevel: level, message: message, metadata: { metadata().map { CallMetadata($0) } },
            source: source, file: file, function: function, line: line)
    }

    /// The enabled path with a dictionary literal's entries.
    @usableFromInline
    func record(
        callLevel level: Level, message: () -> Message, metadata: () -> CallMetadata?, source: () -> String?,
        file: String, function: String, line: UInt
    ) {
        // The wall clock read directly (Date() goes through two more layers).
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let parts = self.parts
        let provided = parts.metadataProvider?.get()
        // Moved into the queue, not copied: no retain and release of each string.
        writer.enqueue(
            PendingLogEvent(
                unixNanoseconds: Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec),
                level: level, line: line, label: parts.label, message: message(),
                loggerMetadata: parts.metadata.isEmpty ? nil : parts.metadata,
                providedMetadata: provided, callMetadata: metadata(),
                source: source(), file: file, function: function))
    }

    /// The logger's label, metadata, provider and writer: immutable, so
    /// copies of a logger share one instance and setters make a new one.
    @usableFromInline
    final class Parts: Sendable {
        let label: String
        let metadata: Metadata
        let metadataProvider: MetadataProvider?
        let writer: LogWriter

        init(label: String, metadata: Metadata, metadataProvider: MetadataProvider?, writer: LogWriter) {
            self.label = label
            self.metadata = metadata
            self.metadataProvider = metadataProvider
            self.writer = writer
        }
    }
}

/// A log call's data on its way to the writer thread, as the caller had it:
/// the clock reading, the three metadata parts unmerged (`nil` when the
/// logger has none), the call site's strings.
struct PendingLogEvent: Sendable {
    /// CLOCK_REALTIME at the call, nanoseconds since 1970.
    var unixNanoseconds: Int64
    var level: IngestLogger.Level
    var line: UInt
    var label: String
    /// Unformatted: the writer thread makes its text.
    var message: IngestLogger.Message
    var loggerMetadata: IngestLogger.Metadata?
    var providedMetadata: IngestLogger.Metadata?
    var callMetadata: IngestLogger.CallMetadata?
    var source: String?
    var file: String
    var function: String
    /// A swift-log call (``IngestLogHandler``): its `LogEvent` as swift-log
    /// made it, and the handler's and provider's metadata, unmerged; `nil`
    /// for ``IngestLogger``'s calls. Its message, source and metadata are
    /// read from there on the writer thread (the fields above stay empty).
    var swiftLog: SwiftLogCall? = nil
    /// The error a swift-log call passed, as text (made at the call: an
    /// `Error` need not be `Sendable`).
    var error: ErrorText? = nil

    /// A swift-log call as the caller had it.
    struct SwiftLogCall: Sendable {
        /// The call's event, without its error (kept as ``ErrorText``).
        /// Its `source` is derived from `file` only when the writer reads it.
        var event: Logging.LogEvent
        var handlerMetadata: Logging.Logger.Metadata?
        var providedMetadata: Logging.Logger.Metadata?
    }

    /// The message's text (made here, on the writer thread, for IngestLogger's calls).
    var messageText: String { swiftLog?.event.message.description ?? message.description }

    /// The `source` argument, else the module of `file`.
    var sourceText: String { swiftLog?.event.source ?? source ?? LogWriter.module(ofFileID: file) }

    /// An error's type and text.
    struct ErrorText: Sendable, Hashable {
        var type: String
        var message: String
    }

    /// The merged metadata (logger, then provider, then call: later wins on
    /// equal keys); on the writer thread. Without anything to merge, the one
    /// non-empty part as it is.
    var metadata: IngestLogger.Metadata {
        let logger = loggerMetadata.flatMap { $0.isEmpty ? nil : $0 }
        let provided = providedMetadata.flatMap { $0.isEmpty ? nil : $0 }
        let call = callMetadata.flatMap { $0.isEmpty ? nil : $0.metadata }
        switch (logger, provided, call) {
        case (nil, nil, nil): return [:]
        case (let only?, nil, nil), (nil, let only?, nil), (nil, nil, let only?): return only
        default: break
        }
        var merged = loggerMetadata ?? [:]
        if let providedMetadata { merged.merge(providedMetadata) { _, new in new } }
        if let call { merged.merge(call) { _, new in new } }
        return merged
    }
}
