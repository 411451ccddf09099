import Foundation
import IngestCore
import IngestSupport

/// The local (non-synced) side of one ``Realm``: its SQLite store, the
/// store's write transaction, and the managed objects the realm handed out.
///
/// A local realm holds its own as its backend (``RealmBackend/local(_:)``,
/// made at open) and calls it at three points (see Docs/LocalRealms.md, "Hook"):
///
/// | Realm | call |
/// | --- | --- |
/// | `beginWrite()` | `store.beginWrite(realm: self)` |
/// | `commitWrite()`, after its own checks | `store.commitWrite(realm: self)` |
/// | `cancelWrite()` | `store.cancelWrite(realm: self)` |
///
/// Managed objects are plain instances whose stored state is remembered
/// (a snapshot): at commit, every live managed object is encoded and the
/// properties that differ from its snapshot are written; at the start of a
/// write, a difference means the object was changed outside a write
/// transaction, which is an error (and the change is undone).
final class LocalRealmStore {
    let store: LocalStore
    private(set) var inTransaction = false

    private struct Managed {
        weak var object: ObjectBase?
        let typeSchema: TypeSchema
        var rowID: Int64
        var snapshot: BSONDocument
        var addedInTransaction: Bool
    }

    private var managed: [ObjectIdentifier: Managed] = [:]
    private var deletedInTransaction: [ObjectIdentifier: Managed] = [:]

    /// The write state of one realm on `store` (``LocalStoreCache`` shares
    /// the store between the realms opened on one file).
    init(store: LocalStore) {
        self.store = store
    }

    deinit {
        if inTransaction { store.rollbackWriteTransaction() }
    }

    // MARK: Transactions (the hook)

    /// Starts the store's write transaction. First checks the managed
    /// objects: one changed since its last write was changed outside a
    /// write transaction; the change is undone and the error thrown.
    func beginWrite(realm: Realm) throws(RealmError) {
        var outside: RealmError?
        for (key, entry) in managed {
            guard let object = entry.object else { managed[key] = nil; continue }
            let current = try encode(object, entry.typeSchema, realm: realm)
            guard current != entry.snapshot else { continue }
            let changed = current.first(where: { entry.snapshot[$0.key] != $0.value })?.key ?? "?"
            outside =
                outside
                ?? RealmError(
                    .modifiedOutsideWriteTransaction, className: entry.typeSchema.className, propertyName: changed, fileURL: store.fileURL,
                    message:
                        "\(entry.typeSchema.className).\(changed) of a managed object was changed outside a write transaction, so the change was undone; change managed objects inside realm.write { }"
                )
            try restore(object, entry, realm: realm)
        }
        if let outside { throw outside }
        do throws(LocalStoreError) {
            try store.beginWriteTransaction()
        } catch {
            throw RealmError(local: error)
        }
        inTransaction = true
    }

    /// Writes the changed properties of managed objects, then commits. On
    /// failure everything is rolled back and the error thrown.
    func commitWrite(realm: Realm) throws(RealmError) {
        guard inTransaction else { return }
        var updated: [(ObjectIdentifier, BSONDocument)] = []
        do throws(RealmError) {
            let access = store.writerAccess
            for (key, entry) in managed {
                guard let object = entry.object else { continue }
                let current = try encode(object, entry.typeSchema, realm: realm)
                guard current != entry.snapshot else { continue }
                var changes = BSONDocument()
                for field in current where entry.snapshot[field.key] != field.value {
                    changes.append(field.key, field.value)
                }
                do throws(LocalStoreError) {
                    _ = try access.update(
                        entry.typeSchema.className, where: SQLFragment(sql: " WHERE rowid = ?", values: [.integer(entry.rowID)]),
                        fields: changes)
                } catch {
                    throw RealmError(local: error)
                }
                updated.append((key, current))
            }
            do {
                try store.commitWriteTransaction()
            } catch {
                inTransaction = false
                throw RealmError(local: error)
            }
        } catch {
            if inTransaction { cancelWrite(realm: realm) } else { undoTransactionState(realm: realm) }
            throw error
        }
        inTransaction = false
        for (key, snapshot) in updated { managed[key]?.snapshot = snapshot }
        for key in managed.keys { managed[key]?.addedInTransaction = false }
        deletedInTransaction.removeAll()
    }

    /// Rolls the store's transaction back; managed objects changed in it
    /// get their stored values back.
    func cancelWrite(realm: Realm) {
        guard inTransaction else { return }
        store.rollbackWriteTransaction()
        inTransaction = false
        undoTransactionState(realm: realm)
    }

    private func undoTransactionState(realm: Realm) {
        for (key, entry) in managed {
            if entry.addedInTransaction {
                managed[key] = nil  // never stored: unmanaged again
            } else if let object = entry.object {
                try? restore(object, entry, realm: realm)
            }
        }
        for (key, entry) in deletedInTransaction { managed[key] = entry }
        deletedInTransaction.removeAll()
    }

    // MARK: Managed objects

    func manage(_ object: ObjectBase, typeSchema: TypeSchema, rowID: Int64, snapshot: BSONDocument, added: Bool = false) {
        managed[ObjectIdentifier(object)] = Managed(
            object: object, typeSchema: typeSchema, rowID: rowID, snapshot: snapshot,
            addedInTransaction: added)
    }

    /// The row of `object`, if this realm manages it.
    func rowID(of object: ObjectBase) -> Int64? {
        guard let entry = managed[ObjectIdentifier(object)], entry.object === object else { return nil }
        return entry.rowID
    }

    /// Stops managing `object` (it was deleted in the open transaction).
    func unmanage(_ object: ObjectBase) {
        let key = ObjectIdentifier(object)
        if let entry = managed.removeValue(forKey: key), !entry.addedInTransaction {
            deletedInTransaction[key] = entry
        }
    }

    /// Stops managing every object (``Realm/invalidate()``; outside a write
    /// transaction): they keep their values, later changes are not saved.
    func forgetManagedObjects() {
        managed.removeAll()
        deletedInTransaction.removeAll()
    }

    /// The number of live managed objects (for tests and diagnostics).
    var managedCount: Int { managed.values.filter { $0.object != nil }.count }

    func encode(_ object: ObjectBase, _ typeSchema: TypeSchema, realm: Realm) throws(RealmError) -> BSONDocument {
        var encoder = BSONRecordEncoder(types: realm.resolver, capacity: 256)
        try typeSchema.encodeDocument(object: object, into: &encoder)
        do {
            return try BSONDocument(bson: encoder.bytes)
        } catch {
            throw RealmError(
                .localStoreFailed, className: typeSchema.className,
                message: "\(typeSchema.className): the object could not be encoded (\(error))")
        }
    }

    private func restore(_ object: ObjectBase, _ entry: Managed, realm: Realm) throws(RealmError) {
        try withReadAccess { access throws(RealmError) in
            let context = LocalDecodingContext(realm: realm, access: access, local: self)
            try context.fill(object, entry.typeSchema, from: entry.snapshot)
        }
    }

    /// Runs `body` with read access: inside the realm's write transaction
    /// through the writer (reads see the transaction's changes), otherwise
    /// on a reader connection in one snapshot (links read consistently).
    func withReadAccess<Result>(_ body: (LocalStoreAccess) throws(RealmError) -> Result) throws(RealmError) -> Result {
        if inTransaction { return try body(store.writerAccess) }
        let connection: SQLiteConnection
        do throws(LocalStoreError) {
            connection = try store.checkOutReader()
            try connection.execute("BEGIN")
        } catch {
            throw RealmError(local: error)
        }
        defer { store.checkIn(connection) }
        defer { try? connection.execute("COMMIT") }
        return try body(LocalStoreAccess(connection: connection, tables: store.tables, schema: store.schema))
    }
}
