#if canImport(Glibc)
import Glibc
#endif
import Logging

/// A swift-log backend: every `Logger` call of the app and of its libraries
/// becomes an ``IngestLogEvent`` in the server's `LogEvent` collection,
/// recorded through a ``LogWriter`` that keeps it on disk until the server
/// has it. Installed with one line:
///
/// ```swift
/// import DataIngest
/// import Logging
///
/// let user = try await app.login(credentials: .anonymous)
/// let writer = try LogWriter(user: user)                     // one per process
/// LoggingSystem.bootstrap(IngestLogHandler.factory(writer))  // or, with the console too:
/// // LoggingSystem.bootstrap(IngestLogHandler.factory(writer, alsoTo: StreamLogHandler.standardError))
///
/// let logger = Logger(label: "com.example.api")
/// logger.info("order looked up", metadata: ["order_id": "12"])
/// logger.error("payment failed", error: error)               // type and text kept
/// writer.shutdown()                                          // at exit: commits what is queued
/// ```
///
/// As swift-log requires, `logLevel` and `metadata` are values: changing
/// them on one `Logger` never affects another. Metadata is merged handler,
/// then ``metadataProvider``, then the call's (later wins on equal keys),
/// and stored as structured data: dictionaries as embedded documents,
/// arrays as arrays, booleans and numbers given as `.stringConvertible` as
/// BSON booleans and numbers. The call's `error` is kept as the event's
/// `error` (its type and text), and its source, file, function and line as
/// those fields.
///
/// A call never blocks on I/O: it reads the clock, runs the metadata
/// provider and hands the event to the writer's bounded queue; the writer's
/// thread merges, encodes and commits. The writer's
/// ``LogWriter/Configuration/whenFull`` policy, its dropped-events counters,
/// ``LogWriter/flush(timeout:)`` and ``LogWriter/shutdown()`` apply as for
/// ``IngestLogger``, which shares the writer.
public struct IngestLogHandler: LogHandler {
    /// Events below this level are not passed to the handler by `Logger`. Default `.info`.
    public var logLevel: Logging.Logger.Level = .info
    /// The label, metadata, provider and writer: immutable and shared by
    /// copies, replaced (not mutated) when a setter changes the metadata or
    /// the provider. The handler is two words, one of them a reference, so
    /// `Logger` keeps it inline and copying it out (swift-log does for every
    /// call, enabled or not) retains one object.
    @usableFromInline var parts: Parts

    /// The label of the `Logger` this handler was made for.
    public var label: String { parts.label }

    /// Where the events go.
    public var writer: LogWriter { parts.writer }

    /// Metadata added to every event of this handler (and so of its `Logger`).
    public var metadata: Logging.Logger.Metadata {
        get { parts.metadata }
        set { parts = Parts(label: parts.label, metadata: newValue, metadataProvider: parts.metadataProvider, writer: parts.writer) }
    }

    /// Context metadata added at each call (a request id from a task-local,
    /// say); merged after ``metadata`` and before the call's metadata.
    public var metadataProvider: Logging.Logger.MetadataProvider? {
        get { parts.metadataProvider }
        set { parts = Parts(label: parts.label, metadata: parts.metadata, metadataProvider: newValue, writer: parts.writer) }
    }

    /// A handler for the `Logger` labelled `label`, writing through `writer`.
    /// `metadataProvider` defaults to the one given to
    /// `LoggingSystem.bootstrap(_:metadataProvider:)`, as swift-log's own
    /// handlers do.
    public init(
        label: String, writer: LogWriter,
        metadataProvider: Logging.Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        parts = Parts(label: label, metadata: [:], metadataProvider: metadataProvider, writer: writer)
    }

    /// Reads or sets one metadata entry of this handler.
    public subscript(metadataKey key: String) -> Logging.Logger.Metadata.Value? {
        get { parts.metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Records one event (swift-log's `Logger` checked the level already).
    /// On the caller's thread: the clock, the provider, the error's text;
    /// the event itself is moved to the writer's queue as it is (its
    /// message, metadata and source are read on the writer thread).
    public func log(event: LogEvent) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let parts = self.parts
        var error: PendingLogEvent.ErrorText?
        var call = event
        if let thrown = event.error {
            // Made here: an `Error` need not be Sendable, so it does not go to the writer thread.
            error = PendingLogEvent.ErrorText(type: String(reflecting: type(of: thrown)), message: String(describing: thrown))
            call.error = nil
        }
        parts.writer.enqueue(
            PendingLogEvent(
                unixNanoseconds: Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec),
                level: IngestLogger.Level(event.level), line: event.line, label: parts.label, message: IngestLogger.Message.empty,
                loggerMetadata: nil, providedMetadata: nil, callMetadata: nil, source: nil, file: event.file, function: event.function,
                swiftLog: PendingLogEvent.SwiftLogCall(
                    event: call, handlerMetadata: parts.metadata.isEmpty ? nil : parts.metadata,
                    providedMetadata: parts.metadataProvider?.get()),
                error: error))
    }

    /// A factory for `LoggingSystem.bootstrap`: every `Logger` made afterwards
    /// records through `writer`.
    ///
    /// ```swift
    /// LoggingSystem.bootstrap(IngestLogHandler.factory(writer))
    /// ```
    public static func factory(_ writer: LogWriter) -> @Sendable (String) -> any LogHandler {
        { label in IngestLogHandler(label: label, writer: writer) }
    }

    /// The same factory for the bootstrap with a metadata provider, which
    /// every handler then uses:
    ///
    /// ```swift
    /// LoggingSystem.bootstrap(IngestLogHandler.factory(writer), metadataProvider: .init { ["request_id": …] })
    /// ```
    @_disfavoredOverload
    public static func factory(_ writer: LogWriter) -> @Sendable (String, Logging.Logger.MetadataProvider?) -> any LogHandler {
        { label, provider in IngestLogHandler(label: label, writer: writer, metadataProvider: provider) }
    }

    /// A factory for `LoggingSystem.bootstrap` that records through `writer`
    /// and also logs to `other` (swift-log's `MultiplexLogHandler`), such as
    /// the console:
    ///
    /// ```swift
    /// LoggingSystem.bootstrap(IngestLogHandler.factory(writer, alsoTo: StreamLogHandler.standardError))
    /// ```
    ///
    /// The `Logger`'s level is the lower of the two handlers' (both `.info`
    /// by default); setting it sets both.
    public static func factory(_ writer: LogWriter, alsoTo other: @escaping @Sendable (String) -> any LogHandler)
        -> @Sendable (String) -> any LogHandler
    {
        { label in MultiplexLogHandler([IngestLogHandler(label: label, writer: writer), other(label)]) }
    }

    /// The label, metadata, metadata provider and writer of a handler:
    /// immutable, so copies share one instance and a setter makes a new one.
    @usableFromInline
    final class Parts: Sendable {
        let label: String
        let metadata: Logging.Logger.Metadata
        let metadataProvider: Logging.Logger.MetadataProvider?
        let writer: LogWriter

        init(
            label: String, metadata: Logging.Logger.Metadata, metadataProvider: Logging.Logger.MetadataProvider?,
            writer: LogWriter
        ) {
            self.label = label
            self.metadata = metadata
            self.metadataProvider = metadataProvider
            self.writer = writer
        }
    }
}

extension IngestLogger.Level {
    /// The same level as swift-log's (the names are the same).
    @inlinable
    public init(_ level: Logging.Logger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}
