import Foundation
import IngestCore
import IngestSupport
import Logging

/// One app at run time: its configuration, its current schema (which grows
/// in development mode) and its sink.
///
/// In development mode the grown schema is kept in
/// `<stateDirectory>/<appId>.schema.json`, or with shared state in
/// PostgreSQL (``SharedSchemaStore``) where every instance sees it, and
/// merged into the configured one at start-up, so collections added by
/// clients survive restarts.
///
/// ```swift
/// let app = try IngestApp(configuration: appConfig, sink: sink, schemaFile: path)
/// let schema = app.schema
/// ```
package final class IngestApp: Sendable {
    /// The app's configuration.
    package let configuration: AppConfiguration
    /// Where accepted objects go.
    package let sink: any Sink
    /// Where development mode keeps the grown schema (nil: not persisted).
    package let schemaFile: String?
    /// Where development mode keeps the grown schema with shared state
    /// (instead of ``schemaFile``); nil without shared state.
    package let sharedSchemas: SharedSchemaStore?
    private let current: LockedBox<Schema>
    private let evolution = Lock()
    /// The version of the shared schema last merged (under `evolution`).
    private let sharedVersion = LockedBox<Int64?>(nil)
    /// What uploads did recently on this instance, and the sink's row counts and health (the status page).
    package let activity = IngestActivity()

    /// The app id.
    package var id: String { configuration.id }

    /// The schema uploads are validated against now.
    package var schema: Schema { current.withLock { $0 } }

    /// Prepares the app: converts the configured schema, merges a schema
    /// grown earlier in development mode, and migrates the sink.
    ///
    /// - Throws: ``UploadSetupError`` if the schema file is unreadable or the
    ///   sink cannot be migrated.
    package init(
        configuration: AppConfiguration, sink: any Sink, schemaFile: String?,
        sharedSchemas: SharedSchemaStore? = nil
    ) throws(UploadSetupError) {
        self.configuration = configuration
        self.sink = sink
        self.schemaFile = schemaFile
        self.sharedSchemas = configuration.developmentMode ? sharedSchemas : nil
        var schema: Schema
        do {
            schema = try configuration.schema.coreSchema()
        } catch {
            throw UploadSetupError("app \(configuration.id): the configured schema is invalid: \(error.message)")
        }
        if configuration.developmentMode, let sharedSchemas {
            do throws(SinkError) {
                if let stored = try sharedSchemas.load(appId: configuration.id) {
                    schema = SchemaEvolution.merged(schema, with: stored.schema.objectSchemas)
                    sharedVersion.withLock { $0 = stored.version }
                }
            } catch {
                throw UploadSetupError("app \(configuration.id): cannot read the development schema in the shared state: \(error)")
            }
        } else if configuration.developmentMode, let schemaFile, FileManager.default.fileExists(atPath: schemaFile) {
            do {
                let stored = try Schema(json: try Data(contentsOf: URL(fileURLWithPath: schemaFile)))
                schema = SchemaEvolution.merged(schema, with: stored.objectSchemas)
            } catch {
                throw UploadSetupError(
                    "app \(configuration.id): cannot read the development schema \(schemaFile): \(error); "
                        + "fix or delete the file")
            }
        }
        do {
            try sink.migrate(to: schema)
        } catch {
            throw UploadSetupError("app \(configuration.id): cannot prepare the sink: \(error)")
        }
        current = LockedBox(schema)
    }

    /// Development mode: adds what `records` need to the schema, migrates the
    /// sink, persists the schema, and returns the schema to validate against.
    /// Outside development mode it returns the schema unchanged.
    func schemaForUpload(
        records: [(collection: String, document: BSONDocument)], clientSchema: Schema?,
        logger: Logger
    ) throws(SinkError) -> Schema {
        try evolve(logger: logger) { SchemaEvolution.grow($0, records: records, clientSchema: clientSchema) }
    }

    /// Development mode: adds the classes and properties of `declared` that
    /// the schema lacks (the schema changeset of a Realm client, which can
    /// arrive, and be acknowledged, before any object), migrates the sink and
    /// persists the schema, so that later sessions and other instances know
    /// them. Outside development mode it returns the schema unchanged.
    package func learnDeclared(_ declared: Schema, logger: Logger) throws(SinkError) -> Schema {
        try evolve(logger: logger) { base in
            let merged = SchemaEvolution.merged(base, with: declared.objectSchemas)
            return merged == base ? nil : merged
        }
    }

    /// Development mode's growth: `grow` returns the schema with what is
    /// missing added, or nil when nothing is; the grown schema is migrated,
    /// persisted (the schema file, or the shared state) and returned.
    private func evolve(logger: Logger, _ grow: (Schema) -> Schema?) throws(SinkError) -> Schema {
        guard configuration.developmentMode else { return schema }
        // Quick check without the lock: most uploads need nothing new.
        if grow(schema) == nil { return schema }
        if let sharedSchemas { return try learnShared(grow, in: sharedSchemas, logger: logger) }
        return try evolution.withLock { () throws(SinkError) -> Schema in
            let base = schema
            guard let grown = grow(base) else { return base }
            guard try migrateSink(to: grown, logger: logger) else { return base }
            if let schemaFile, let data = try? grown.jsonData() {
                // Best effort: the sink already has the columns; a lost file
                // means the schema is re-learned from the next upload.
                try? PrivateFiles.write([UInt8](data), to: schemaFile)
            }
            current.withLock { $0 = grown }
            return grown
        }
    }

    /// ``evolve(logger:_:)`` on shared state: under
    /// the app's row lock (serialized across every instance), start from the
    /// stored schema, add what `records` need, migrate the sink, store the
    /// grown schema. A change the sink refuses is not stored (its objects are
    /// rejected, as on one server).
    private func learnShared(_ grow: (Schema) -> Schema?, in store: SharedSchemaStore, logger: Logger) throws(SinkError) -> Schema {
        try evolution.withLock { () throws(SinkError) -> Schema in
            let learned = try store.learn(appId: id) { (stored: Schema?) throws(SinkError) -> (store: Schema?, result: Schema) in
                let base = try adoptLocked(stored, logger: logger)
                guard let grown = grow(base) else { return (nil, base) }
                guard try migrateSink(to: grown, logger: logger) else { return (nil, base) }
                current.withLock { $0 = grown }
                return (grown, grown)
            }
            sharedVersion.withLock { $0 = learned.version }
            return learned.result
        }
    }

    /// Development mode on shared state: merges what other instances learned
    /// since the last look (one cheap query when nothing changed) and
    /// migrates the sink for it. ``SinkMonitor`` calls it every few seconds,
    /// so the row counts and the status page list every learned collection.
    package func adoptSharedSchema(logger: Logger = Logger(label: "ingest-server")) throws(SinkError) {
        guard let sharedSchemas else { return }
        let known = sharedVersion.withLock { $0 }
        guard let stored = try sharedSchemas.load(appId: id, unlessVersion: known) else { return }
        try evolution.withLock { () throws(SinkError) -> Void in
            _ = try adoptLocked(stored.schema, logger: logger)
            sharedVersion.withLock { $0 = max($0 ?? 0, stored.version) }
        }
    }

    /// The current schema with `stored` merged in, the sink migrated for it
    /// (the caller holds `evolution`). A merge the sink refuses is logged
    /// and left out.
    private func adoptLocked(_ stored: Schema?, logger: Logger) throws(SinkError) -> Schema {
        let base = schema
        guard let stored else { return base }
        let merged = SchemaEvolution.merged(base, with: stored.objectSchemas)
        guard merged != base, try migrateSink(to: merged, logger: logger) else { return base }
        current.withLock { $0 = merged }
        return merged
    }

    /// Migrates the sink to a grown schema; false when the database refuses
    /// the change (e.g. its column limit, a column of another type). That
    /// must not fail uploads forever: it is logged, and validating against
    /// the schema before it rejects the objects that need it, with reasons.
    /// A transient failure is thrown (the upload answers 503).
    private func migrateSink(to grown: Schema, logger: Logger) throws(SinkError) -> Bool {
        do throws(SinkError) {
            try sink.migrate(to: grown)
            return true
        } catch {
            if error.isTransient { throw error }
            logger.warning(
                "app \(id): development mode cannot extend the sink, objects needing it are rejected: \(error)",
                metadata: ["app": "\(id)"])
            return false
        }
    }
}

/// A failure while preparing an app for uploads at start-up.
package struct UploadSetupError: Error, Sendable, CustomStringConvertible {
    /// What happened and what to do.
    package var message: String

    /// Creates an error.
    package init(_ message: String) { self.message = message }

    package var description: String { message }
}
