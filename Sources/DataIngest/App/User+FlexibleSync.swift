import Foundation

extension User {
    /// A synced realm configuration for this user, as in the seed SDK: list
    /// the asymmetric types in `objectTypes` and open it with
    /// `try await Realm(configuration:)` (no download is waited for).
    /// Committed transactions go into the user's segment store, which the
    /// user's ``SyncSession`` uploads.
    ///
    /// ```swift
    /// var config = user.flexibleSyncConfiguration()
    /// config.objectTypes = [WeatherSensor.self]
    /// let realm = try await Realm(configuration: config)
    /// ```
    public func flexibleSyncConfiguration() -> Realm.Configuration {
        Realm.Configuration(
            fileURL: URL(fileURLWithPath: app.records.userDirectory(id) + "/flexible-sync.realm"),
            syncConfiguration: SyncConfiguration(identifier: "flexible-sync", session: session.sink))
    }
}
