import Foundation
import IngestCore
import IngestSupport

/// One open ``LocalStore`` per file, schema and schema version in this
/// process, shared by the realms opened on it (each realm keeps its own
/// write state in a ``LocalRealmStore``). A store closes when the last
/// realm using it is gone.
enum LocalStoreCache {
    private struct Key: Hashable {
        var path: String
        var schema: Schema
        var version: UInt64
    }

    private final class WeakStore {
        weak var store: LocalStore?
        init(_ store: LocalStore) { self.store = store }
    }

    private static let stores = LockedBox<[Key: WeakStore]>([:])

    /// The open store of `fileURL` for this schema and version, opened (and
    /// migrated) if no realm has it open. `types` and `resolver` are the
    /// realm's classes, whose prototype instances give the defaults.
    static func store(
        fileURL: URL, schema: Schema, schemaVersion: UInt64, types: [String: TypeSchema],
        resolver: TypeResolver
    ) throws(RealmError) -> LocalStore {
        let key = Key(path: fileURL.path, schema: schema, version: schemaVersion)
        if let existing = stores.withLock({ $0[key]?.store }) { return existing }
        // The declared defaults (from each class's prototype instance) fill
        // properties added by a migration.
        var defaults: [String: BSONDocument] = [:]
        for (name, typeSchema) in types where typeSchema.kind == .topLevel {
            var encoder = BSONRecordEncoder(types: resolver, capacity: 256)
            try typeSchema.encodeDocument(object: typeSchema.prototype, into: &encoder)
            defaults[name] = try? BSONDocument(bson: encoder.bytes)
        }
        let store: LocalStore
        do throws(LocalStoreError) {
            store = try LocalStore(fileURL: fileURL, schema: schema, schemaVersion: schemaVersion, defaults: defaults)
        } catch {
            throw RealmError(local: error)
        }
        return stores.withLock { table in
            table = table.filter { $0.value.store != nil }
            if let raced = table[key]?.store { return raced }
            table[key] = WeakStore(store)
            return store
        }
    }
}
