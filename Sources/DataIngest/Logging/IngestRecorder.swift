import IngestCore

/// Records any asymmetric object the way ``IngestLogger`` records log
/// events, through the ``LogWriter``'s thread, but synchronously: `record`
/// returns only once the object is committed to the store (with the
/// store's configured durability: set `App.Configuration.segmentStore.durability`
/// to `.full` so that a returned call survives power loss). No drop policy
/// ever applies: if the object cannot be committed, `record` throws and
/// nothing is written.
///
/// ```swift
/// let recorder = writer.recorder
/// let invoice = Invoice()
/// invoice._id = "S01-T02-000017"            // retries of the same invoice are idempotent
/// invoice.total = try Decimal128(parsing: "12.50")
/// try recorder.record(invoice)
/// ```
///
/// Each call is one write transaction. Objects of one call to
/// ``record(contentsOf:)`` are committed together (all or none) and arrive
/// at the server together.
public struct IngestRecorder: Sendable {
    /// The writer whose thread commits the objects.
    public let writer: LogWriter

    /// A recorder for `writer`.
    public init(writer: LogWriter) { self.writer = writer }

    /// Commits `object` in its own transaction; returns once committed.
    /// - Throws: ``LoggingError`` `commitFailed` (with the ``RealmError``
    ///   underneath: schema, storage full) or `shutDown`.
    public func record<T: AsymmetricObject>(_ object: T) throws {
        try record(contentsOf: [object])
    }

    /// Commits `objects` in one transaction (all or none).
    public func record<T: AsymmetricObject>(contentsOf objects: [T]) throws {
        guard !objects.isEmpty else { return }
        let transfer = UncheckedTransfer(objects)
        try writer.perform { _, realms in
            let realm = try Self.realm(for: T.self, writer: writer, in: &realms)
            try realm.write {
                for object in transfer.value { realm.create(T.self, value: object) }
            }
            return transfer.value.count
        }
    }

    /// Commits one object given as a `[String: Any]` (as for `realm.create`).
    public func record<T: AsymmetricObject>(_ type: T.Type, value: [String: Any]) throws {
        let transfer = UncheckedTransfer(value)
        try writer.perform { _, realms in
            let realm = try Self.realm(for: T.self, writer: writer, in: &realms)
            try realm.write { realm.create(T.self, value: transfer.value) }
            return 1
        }
    }

    /// The writer thread's realm for `type`, opened on first use.
    private static func realm<T: AsymmetricObject>(
        for type: T.Type, writer: LogWriter,
        in realms: inout [ObjectIdentifier: Realm]
    ) throws -> Realm {
        if let realm = realms[ObjectIdentifier(type)] { return realm }
        var configuration = writer.realmConfiguration
        configuration.objectTypes = [type]
        let realm = try Realm(configuration: configuration)
        realms[ObjectIdentifier(type)] = realm
        return realm
    }
}

/// Carries a non-Sendable value to the writer thread.
// @unchecked Sendable: the caller blocks until the writer thread is done with
// the value, so the two threads never use it at the same time.
struct UncheckedTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
