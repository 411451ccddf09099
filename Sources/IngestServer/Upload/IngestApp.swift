import Foundation
import IngestCore
import IngestSupport

/// One app at run time: its configuration, its current schema (which grows
/// in development mode) and its sink.
///
/// In development mode the grown schema is kept in
/// `<stateDirectory>/<appId>.schema.json` and merged into the configured one
/// at start-up, so collections added by clients survive restarts.
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
    private let current: LockedBox<Schema>
    private let evolution = Lock()
    /// Objects accepted per second over the last ten minutes (the status page's plot).
    package let rate = RateHistory()

    /// The app id.
    package var id: String { configuration.id }

    /// The schema uploads are validated against now.
    package var schema: Schema { current.withLock { $0 } }

    /// Prepares the app: converts the configured schema, merges a schema
    /// grown earlier in development mode, and migrates the sink.
    ///
    /// - Throws: ``UploadSetupError`` if the schema file is unreadable or the
    ///   sink cannot be migrated.
    package init(configuration: AppConfiguration, sink: any Sink, schemaFile: String?) throws(UploadSetupError) {
        self.configuration = configuration
        self.sink = sink
        self.schemaFile = schemaFile
        var schema: Schema
        do {
            schema = try configuration.schema.coreSchema()
        } catch {
            throw UploadSetupError("app \(configuration.id): the configured schema is invalid: \(error.message)")
        }
        if configuration.developmentMode, let schemaFile, FileManager.default.fileExists(atPath: schemaFile) {
            do {
                let stored = try Schema(json: try Data(contentsOf: URL(fileURLWithPath: schemaFile)))
                schema = SchemaEvolution.merged(schema, with: stored.objectSchemas)
            } catch {
                throw UploadSetupError("app \(configuration.id): cannot read the development schema \(schemaFile): \(error); "
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
    func schemaForUpload(records: [(collection: String, document: BSONDocument)], clientSchema: Schema?,
                         log: (@Sendable (String) -> Void)? = nil) throws(SinkError) -> Schema {
        guard configuration.developmentMode else { return schema }
        // Quick check without the lock: most uploads need nothing new.
        if SchemaEvolution.grow(schema, records: records, clientSchema: clientSchema) == nil { return schema }
        return try evolution.withLock { () throws(SinkError) -> Schema in
            let base = schema
            guard let grown = SchemaEvolution.grow(base, records: records, clientSchema: clientSchema) else { return base }
            do throws(SinkError) {
                try sink.migrate(to: grown)
            } catch {
                if error.isTransient { throw error }
                // A change the database refuses (e.g. its column limit) must not
                // fail the upload forever: validate against the old schema, so
                // the objects that need the change are rejected with reasons.
                log?("app \(id): development mode cannot extend the sink, objects needing it are rejected: \(error)")
                return base
            }
            if let schemaFile, let data = try? grown.jsonData() {
                // Best effort: the sink already has the columns; a lost file
                // means the schema is re-learned from the next upload.
                try? PrivateFiles.write([UInt8](data), to: schemaFile)
            }
            current.withLock { $0 = grown }
            return grown
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
