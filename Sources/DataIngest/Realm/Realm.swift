import Foundation
import IngestCore

/// A realm: the objects of one configuration. A synced realm streams
/// ``AsymmetricObject``s to the server; a local realm holds ordinary
/// ``Object``s.
///
/// ```swift
/// var config = Realm.Configuration(syncConfiguration: SyncConfiguration(identifier: "sensors", transactionSink: store))
/// config.objectTypes = [WeatherSensor.self]
/// let realm = try Realm(configuration: config)
/// try realm.write {
///     realm.create(WeatherSensor.self, value: ["_id": ObjectId.generate(), "deviceId": "WX1278UIT",
///                                              "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
///                                              "windSpeedInMph": 2])
/// }
/// ```
///
/// A realm is confined to the thread (or actor) that opened it, like the
/// seed SDK's; open one per thread.
public final class Realm {
    /// The configuration it was opened with.
    public let configuration: Configuration
    /// The file it was opened on.
    public let fileURL: URL
    /// The classes of this realm, with their embedded classes and link
    /// targets (the schema carried to the server).
    public let schema: Schema
    /// Whether this is a synced realm.
    public var isSynced: Bool {
        if case .synced = backend { return true }
        return false
    }
    /// Whether a write transaction is open.
    public internal(set) var isInWriteTransaction: Bool {
        get { transaction.isOpen }
        set { transaction.isOpen = newValue }
    }

    /// Where write transactions go (the synced realm's sink, or the local
    /// realm's SQLite store), chosen at open.
    let backend: RealmBackend
    let resolver: TypeResolver
    /// The classes `create` accepts, by type.
    let writableTypes: [ObjectIdentifier: TypeSchema]
    /// All classes of the schema, by class name.
    let typesByName: [String: TypeSchema]

    /// Encodes the open transaction's objects (one buffer, reused).
    let encoder: BSONRecordEncoder
    /// The open transaction, in one stored property so that a `create`
    /// makes one exclusive access instead of one per field. Unchecked: a
    /// realm is confined to one thread and `create` touches it only through
    /// one `inout` access, so the runtime check, paid once per object, would
    /// guard nothing.
    @exclusivity(unchecked) var transaction = Transaction()

    /// The first error of a `create`, thrown when the transaction ends.
    var deferredError: RealmError? {
        get { transaction.deferredError }
        set { transaction.deferredError = newValue }
    }

    struct Transaction {
        var isOpen = false
        var records: [EncodedRecord] = []
        /// Cursors set in this transaction (``Realm/setCursor(_:named:)``).
        var cursors: [(name: String, value: [UInt8])] = []
        var keys = TransactionKeySet()
        /// The class of the previous `create`.
        var lastCreated: TypeSchema?
        var deferredError: RealmError?
    }

    struct TransactionKey: Hashable {
        var type: ObjectIdentifier
        var key: PrimaryKeyValue

        /// One combined word for the common keys instead of one `combine`
        /// per part (type, case, each word of the value): the set is
        /// checked once per created object.
        func hash(into hasher: inout Hasher) {
            let type = UInt64(UInt(bitPattern: self.type))
            switch key {
            case .objectId(let id):
                let word = id.withBytes { raw in
                    raw.loadUnaligned(as: UInt64.self) ^ UInt64(raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                        &* 0x9E37_79B9_7F4A_7C15
                }
                hasher.combine(word ^ type)
            case .int(let value):
                hasher.combine(UInt64(bitPattern: value) ^ type)
            case .string, .uuid:
                hasher.combine(type)
                hasher.combine(key)
            }
        }
    }

    /// Opens a realm, checking the configuration rules and the schema.
    /// Throws ``RealmError`` naming the type, property and fix.
    public convenience init(configuration: Configuration = .defaultConfiguration) throws(RealmError) {
        try self.init(opening: configuration)
    }

    private init(opening configuration: Configuration) throws(RealmError) {
        let opened = try Realm.resolve(configuration)
        let url = configuration.resolvedFileURL
        try OpenFileRegistry.claim(url, synced: configuration.syncConfiguration != nil)
        self.configuration = configuration
        self.fileURL = url
        self.schema = opened.schema
        self.resolver = opened.resolver
        self.writableTypes = opened.writable
        self.typesByName = opened.byName
        self.encoder = BSONRecordEncoder(types: opened.resolver)
        if let target = opened.target {
            self.backend = .synced(target)
        } else {
            // A local realm opens (creates, migrates) its SQLite store now, so
            // that its errors surface at open rather than at the first read.
            do {
                let store = try LocalStoreCache.store(
                    fileURL: url, schema: opened.schema, schemaVersion: configuration.schemaVersion,
                    types: opened.byName, resolver: opened.resolver)
                self.backend = .local(LocalRealmStore(store: store))
            } catch {
                OpenFileRegistry.release(url)  // no deinit runs for a failed init
                throw error
            }
        }
    }

    /// The SQLite side of a local realm (its store and write state); `nil`
    /// for a synced realm.
    var localStore: LocalRealmStore? { backend.localStore }

    /// Opens a realm from async code, as the seed does
    /// (`try await Realm(configuration: config)`). A synced realm of
    /// asymmetric types needs no download, so this does not wait.
    public convenience init(configuration: Configuration = .defaultConfiguration) async throws(RealmError) {
        try self.init(opening: configuration)
    }

    deinit {
        OpenFileRegistry.release(fileURL)
    }

    /// Makes `types` known to automatic schema discovery (configurations
    /// without `objectTypes`). Swift on Linux cannot enumerate classes at
    /// run time, so register your types once at startup, or list them in
    /// `objectTypes`.
    ///
    /// ```swift
    /// Realm.registerTypes([Settings.self, WeatherSensor.self])
    /// let local = try Realm()   // Settings only: asymmetric types are left out
    /// ```
    public static func registerTypes(_ types: [ObjectBase.Type]) {
        TypeRegistry.register(types)
    }

    /// The types automatic discovery knows, in registration order.
    public static var registeredTypes: [ObjectBase.Type] { TypeRegistry.all }
}
