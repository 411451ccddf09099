import Foundation
import IngestCore
import IngestSupport

extension Realm {
    /// How to open a realm: its file, its classes and whether it is synced.
    ///
    /// ```swift
    /// // A local realm for app settings, excluding the asymmetric types:
    /// let local = Realm.Configuration(objectTypes: [Settings.self])
    /// // A synced realm for upload-only sensor readings:
    /// var synced = Realm.Configuration(syncConfiguration: SyncConfiguration(identifier: "sensors", transactionSink: store))
    /// synced.objectTypes = [WeatherSensor.self]
    /// ```
    public struct Configuration: Sendable {
        /// The realm file. Default: `nil`, meaning `default.realm` (local) or
        /// `<identifier>.realm` (synced) in ``Realm/defaultDirectory``.
        public var fileURL: URL?
        /// The schema version of a local realm (used by its migrations).
        /// Default: 0.
        public var schemaVersion: UInt64
        /// The classes of this realm. Default: `nil`, meaning automatic
        /// discovery among the registered types (``Realm/registerTypes(_:)``
        /// and every type listed in a configuration opened before): a local
        /// realm takes the `Object` and `EmbeddedObject` types and leaves
        /// asymmetric types out; a synced realm takes the asymmetric types.
        /// Embedded types and link targets of listed types are added
        /// automatically.
        public var objectTypes: [ObjectBase.Type]?
        /// Set for a synced realm. Default: `nil` (a local realm).
        public var syncConfiguration: SyncConfiguration?
        /// As in the seed SDK, a key that encrypts the realm's data at rest.
        /// Default: `nil`.
        ///
        /// - A synced realm's objects live in the user's segment store, which
        ///   `App.Configuration.segmentStore.encryptionKey` encrypts (AES-256-GCM,
        ///   a 32-byte key; see ``SegmentStore/Configuration/encryptionKey``).
        ///   Leave this `nil`, or set the same 32 bytes: another value fails to
        ///   open with ``RealmError/Code/encryptionKeyMismatch``, so a realm
        ///   never writes plaintext while its code asks for encryption.
        /// - Local realms are not encrypted by this release: a local
        ///   configuration with a key fails to open with
        ///   ``RealmError/Code/encryptionNotSupported`` (never stored as plaintext).
        /// - Keys are 32 bytes; the seed's 64-byte keys fail with
        ///   ``RealmError/Code/invalidEncryptionKey`` (never truncated).
        ///
        /// ```swift
        /// var appConfig = App.Configuration()
        /// appConfig.segmentStore.encryptionKey = key          // 32 bytes from the keychain
        /// ...
        /// var config = user.flexibleSyncConfiguration()
        /// config.encryptionKey = key                           // optional: checked against the store's
        /// ```
        public var encryptionKey: Data?

        /// Creates a configuration; every argument has a default.
        public init(
            fileURL: URL? = nil, schemaVersion: UInt64 = 0, objectTypes: [ObjectBase.Type]? = nil,
            syncConfiguration: SyncConfiguration? = nil, encryptionKey: Data? = nil
        ) {
            self.fileURL = fileURL
            self.schemaVersion = schemaVersion
            self.objectTypes = objectTypes
            self.syncConfiguration = syncConfiguration
            self.encryptionKey = encryptionKey
        }

        private static let defaultBox = LockedBox(Configuration())

        /// The configuration `Realm()` uses. Default: a local realm with
        /// automatic discovery, in `default.realm`.
        public static var defaultConfiguration: Configuration {
            get { defaultBox.withLock { $0 } }
            set { defaultBox.withLock { $0 = newValue } }
        }

        /// The file this configuration opens.
        public var resolvedFileURL: URL {
            if let fileURL { return fileURL.standardizedFileURL }
            let name = syncConfiguration.map { Self.fileName(for: $0.identifier) } ?? "default"
            return Realm.defaultDirectory.appendingPathComponent("\(name).realm").standardizedFileURL
        }

        /// A file name from a sync identifier: characters other than letters,
        /// digits, `-` and `_` become `_`.
        private static func fileName(for identifier: String) -> String {
            String(
                identifier.unicodeScalars.map { scalar in
                    (scalar.properties.isAlphabetic && scalar.isASCII) || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_"
                        ? Character(scalar) : "_"
                })
        }
    }

    private static let directoryBox = LockedBox<URL?>(nil)

    /// Where realm files go when a configuration gives no `fileURL`.
    /// Default: the current directory.
    public static var defaultDirectory: URL {
        get { directoryBox.withLock { $0 } ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true) }
        set { directoryBox.withLock { $0 = newValue } }
    }
}
