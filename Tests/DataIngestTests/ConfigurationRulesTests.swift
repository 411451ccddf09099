import Foundation
import Testing
@testable import DataIngest
import IngestTestSupport

final class LocalSettings: Object {
    @Persisted(primaryKey: true) var _id: String
    @Persisted var units: String = "imperial"
}

final class NoKeyReading: AsymmetricObject {
    @Persisted var value: Int
}

final class WrongKeyReading: AsymmetricObject {
    @Persisted(primaryKey: true) var key: String
}

final class DoubleKeyReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: Double
}

final class NestedOptionalReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var level: Int??
}

final class ListOfListsReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var grid: List<List<Int>>
}

final class RequiredEmbeddedReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var location: ModelLocation
}

final class IndexedDoubleReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted(indexed: true) var score: Double
}

final class BadMappingReading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    override class func propertiesMapping() -> [String: String] { ["nope": "x"] }
}

final class TwinA: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    override class func className() -> String { "Twin" }
}

final class TwinB: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    override class func className() -> String { "Twin" }
}

@Suite struct ConfigurationRulesTests {
    let directory: TemporaryDirectory
    let sink = MemorySink()

    init() throws { directory = try TemporaryDirectory() }

    private func local(_ types: [ObjectBase.Type]?, name: String = "local") -> Realm.Configuration {
        Realm.Configuration(fileURL: directory.file("\(name).realm"), objectTypes: types)
    }

    private func synced(_ types: [ObjectBase.Type]?, name: String = "synced") -> Realm.Configuration {
        syncedConfiguration(types, in: directory, sink: sink, name: name)
    }

    @Test func aLocalConfigurationListingAnAsymmetricTypeFails() {
        let error = expectRealmError(.asymmetricTypeInLocalRealm) {
            _ = try Realm(configuration: local([LocalSettings.self, WeatherSensor.self]))
        }
        #expect(error?.className == "WeatherSensor")
        #expect(
            error?.message
                == "WeatherSensor is an AsymmetricObject and cannot be used in a local (non-synced) realm; remove it from this configuration's objectTypes (list only the local types, e.g. objectTypes = [LocalSettings.self]) and create it in a synced realm"
        )
    }

    @Test func discoveryLeavesAsymmetricTypesOutOfLocalRealms() throws {
        Realm.registerTypes([LocalSettings.self, WeatherSensor.self])
        #expect(Realm.registeredTypes.contains { $0 == WeatherSensor.self })
        let realm = try Realm(configuration: local(nil))
        #expect(realm.schema["LocalSettings"] != nil)
        #expect(realm.schema["WeatherSensor"] == nil)
        #expect(!realm.schema.objectSchemas.contains { $0.kind == .asymmetric })
        // Creating one there names the fix.
        let error = expectRealmError(.asymmetricTypeInLocalRealm) {
            try realm.write { realm.create(WeatherSensor.self, value: ["deviceId": "x"]) }
        }
        #expect(
            error?.message
                == "WeatherSensor is an AsymmetricObject and this is a local realm; create it in a synced realm whose objectTypes include WeatherSensor"
        )
    }

    @Test func aSyncedConfigurationListingAnObjectTypeFails() {
        let error = expectRealmError(.objectTypeInSyncedRealm) {
            _ = try Realm(configuration: synced([WeatherSensor.self, LocalSettings.self]))
        }
        #expect(
            error?.message
                == "LocalSettings is an Object, but a synced realm holds only AsymmetricObject (upload-only) types; keep LocalSettings in a local realm (a configuration without syncConfiguration) and remove it from this configuration's objectTypes"
        )
    }

    @Test func discoveryTakesOnlyAsymmetricTypesIntoSyncedRealms() throws {
        Realm.registerTypes([LocalSettings.self, WeatherSensor.self])
        let realm = try Realm(configuration: synced(nil))
        #expect(realm.schema["WeatherSensor"]?.kind == .asymmetric)
        #expect(realm.schema["LocalSettings"] == nil)
    }

    @Test func oneFileCannotBeOpenedAsLocalAndSynced() throws {
        let shared = directory.file("shared.realm")
        var localRealm: Realm? = try Realm(configuration: Realm.Configuration(fileURL: shared, objectTypes: [LocalSettings.self]))
        var syncedConfig = synced([WeatherSensor.self])
        syncedConfig.fileURL = shared
        let error = expectRealmError(.fileOpenedAsLocalAndSynced) { _ = try Realm(configuration: syncedConfig) }
        #expect(
            error?.message
                == "\(shared.standardizedFileURL.path) is already open as a local realm and cannot also be opened as a synced realm; give the local and the synced configuration different fileURLs"
        )
        #expect(error?.fileURL == shared.standardizedFileURL)
        // A second local realm on the same file is fine; once all are closed the file is free.
        let second = try Realm(configuration: Realm.Configuration(fileURL: shared, objectTypes: [LocalSettings.self]))
        #expect(second.fileURL == localRealm?.fileURL)
        withExtendedLifetime(localRealm) {}
        localRealm = nil
        expectRealmError(.fileOpenedAsLocalAndSynced) { _ = try Realm(configuration: syncedConfig) }
        withExtendedLifetime(second) {}
    }

    @Test func theFileIsReleasedWhenTheLastRealmCloses() throws {
        let shared = directory.file("released.realm")
        do {
            let localRealm = try Realm(configuration: Realm.Configuration(fileURL: shared, objectTypes: [LocalSettings.self]))
            withExtendedLifetime(localRealm) {}
        }
        var syncedConfig = synced([WeatherSensor.self])
        syncedConfig.fileURL = shared
        let realm = try Realm(configuration: syncedConfig)
        #expect(realm.isSynced)
    }

    @Test func syncedTypesNeedTheIdPrimaryKey() {
        let missing = expectRealmError(.invalidSchema) { _ = try Realm(configuration: synced([NoKeyReading.self])) }
        #expect(
            missing?.message
                == "NoKeyReading: every synced type needs the primary key '_id', but it has no primary key; declare @Persisted(primaryKey: true) var _id: ObjectId (or map your key to '_id' with propertiesMapping())"
        )
        #expect((missing?.underlyingError as? SchemaError)?.code == .missingPrimaryKey)
        let wrong = expectRealmError(.invalidSchema) { _ = try Realm(configuration: synced([WrongKeyReading.self])) }
        #expect(wrong?.propertyName == "key")
        let double = expectRealmError(.invalidSchema) { _ = try Realm(configuration: synced([DoubleKeyReading.self])) }
        #expect(double?.message == "DoubleKeyReading._id: a primary key must be a non-optional Int, String, ObjectId or UUID, not double")
    }

    @Test func unsupportedPropertyTypesAreNamed() {
        let nested = expectRealmError(.unsupportedPropertyType) { _ = try Realm(configuration: synced([NestedOptionalReading.self])) }
        #expect(nested?.message == "NestedOptionalReading.level: a double optional (Int??) cannot be stored; use one level of Optional")
        let lists = expectRealmError(.unsupportedPropertyType) { _ = try Realm(configuration: synced([ListOfListsReading.self])) }
        #expect(lists?.message == "ListOfListsReading.grid: a List cannot hold List<Int>; nested collections are not supported")
        let required = expectRealmError(.unsupportedPropertyType) { _ = try Realm(configuration: synced([RequiredEmbeddedReading.self])) }
        #expect(required?.message == "RequiredEmbeddedReading.location: an object property must be optional; declare it as ModelLocation?")
        let index = expectRealmError(.invalidSchema) { _ = try Realm(configuration: synced([IndexedDoubleReading.self])) }
        #expect(
            index?.message
                == "IndexedDoubleReading.score: a double property cannot be indexed; remove indexed: true (indexes work on Bool, Int, String, Date, ObjectId, UUID and mixed values)"
        )
        let mapping = expectRealmError(.unsupportedPropertyType) { _ = try Realm(configuration: synced([BadMappingReading.self])) }
        #expect(
            mapping?.message
                == "BadMappingReading.propertiesMapping() maps 'nope', which is not a @Persisted property of BadMappingReading; fix the name in propertiesMapping()"
        )
    }

    @Test func twoTypesWithOneClassNameFail() {
        let error = expectRealmError(.duplicateClassName) { _ = try Realm(configuration: synced([TwinA.self, TwinB.self])) }
        #expect(
            error?.message
                == "TwinA and TwinB both have the class name 'Twin'; class names must be unique: override className() in one of them")
    }

    @Test func asymmetricTypesMayEmbedObjectsAndListsOfThemAndLinkToObjects() throws {
        let realm = try Realm(configuration: synced([FullReading.self]))
        #expect(realm.schema["ModelLocation"]?.kind == .embedded)
        #expect(realm.schema["ModelStation"]?.kind == .topLevel)
        // Links to asymmetric types cannot even be declared: AsymmetricObject
        // does not conform to PersistableValue, so `@Persisted var s: WeatherSensor?`
        // does not compile. Schemas from JSON are checked by Schema.structuralErrors.
    }

    @Test func partitionSyncAndAMissingSinkAreRejected() {
        var partition = synced([WeatherSensor.self])
        partition.syncConfiguration?.isFlexibleSync = false
        let error = expectRealmError(.partitionSyncNotSupported) { _ = try Realm(configuration: partition) }
        #expect(
            error?.message
                == "the synced configuration 'synced' is not flexible sync; Data Ingest is a feature of flexible sync: set isFlexibleSync to true"
        )
        var noSink = synced([WeatherSensor.self])
        noSink.syncConfiguration?.transactionSink = nil
        let missing = expectRealmError(.missingTransactionSink) { _ = try Realm(configuration: noSink) }
        #expect(
            missing?.message
                == "the synced configuration 'synced' has no transactionSink, so committed objects would have nowhere to go; open synced realms through user.flexibleSyncConfiguration(), or set syncConfiguration.transactionSink"
        )
    }

    @Test func asymmetricObjectsCannotBeReadDynamically() throws {
        let realm = try Realm(configuration: synced([WeatherSensor.self]))
        let error = expectRealmError(.asymmetricObjectNotReadable) { _ = try realm.readableSchema(className: "WeatherSensor") }
        #expect(
            error?.message
                == "WeatherSensor is an AsymmetricObject: its objects are upload-only and cannot be read; query the server's database instead"
        )
        expectRealmError(.typeNotInRealm) { _ = try realm.readableSchema(className: "Nope") }
        let localRealm = try Realm(configuration: local([LocalSettings.self]))
        #expect(try localRealm.readableSchema(className: "LocalSettings").className == "LocalSettings")
    }

    @Test func defaultFileNamesComeFromTheIdentifier() {
        let config = Realm.Configuration(syncConfiguration: SyncConfiguration(identifier: "app/user 1"))
        #expect(config.resolvedFileURL.lastPathComponent == "app_user_1.realm")
        #expect(Realm.Configuration().resolvedFileURL.lastPathComponent == "default.realm")
    }
}

/// The seed's note on mixed projects: a local realm for settings beside a
/// synced realm for WeatherSensor.
@Suite struct MixedProjectTests {
    @Test func withExplicitObjectTypes() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        let settings = try Realm(
            configuration: Realm.Configuration(
                fileURL: directory.file("settings.realm"),
                objectTypes: [LocalSettings.self]))
        var sensorsConfig = syncedConfiguration(nil, in: directory, sink: sink, name: "sensors")
        sensorsConfig.objectTypes = [WeatherSensor.self]
        let sensors = try Realm(configuration: sensorsConfig)
        #expect(settings.schema.classNames == ["LocalSettings"])
        #expect(!settings.isSynced)
        #expect(sensors.schema.classNames == ["WeatherSensor"])
        try sensors.write {
            sensors.create(
                WeatherSensor.self,
                value: [
                    "deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7,
                    "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
                ])
        }
        #expect(try sink.documents().map(\.collection) == ["WeatherSensor"])
        // Listing the asymmetric type in the local realm is what the seed warns about.
        expectRealmError(.asymmetricTypeInLocalRealm) {
            _ = try Realm(
                configuration: Realm.Configuration(
                    fileURL: directory.file("settings2.realm"),
                    objectTypes: [LocalSettings.self, WeatherSensor.self]))
        }
    }

    @Test func withAutomaticDiscovery() throws {
        let directory = try TemporaryDirectory()
        let sink = MemorySink()
        Realm.registerTypes([LocalSettings.self, WeatherSensor.self])
        let settings = try Realm(configuration: Realm.Configuration(fileURL: directory.file("settings.realm")))
        let sensors = try Realm(configuration: syncedConfiguration(nil, in: directory, sink: sink, name: "sensors"))
        #expect(settings.schema["LocalSettings"] != nil)
        #expect(settings.schema["WeatherSensor"] == nil)
        #expect(sensors.schema["WeatherSensor"] != nil)
        #expect(sensors.schema["LocalSettings"] == nil)
        try sensors.write {
            sensors.create(
                WeatherSensor.self,
                value: [
                    "deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7,
                    "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
                ])
        }
        #expect(sink.transactions.count == 1)
    }
}
