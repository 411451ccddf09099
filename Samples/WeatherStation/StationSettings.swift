import DataIngest
import Foundation

/// The station's own settings, kept in a local (non-synced) realm next to the
/// synced one: the "mixed synced and non-synced realms" case of the seed's
/// note. The local configuration lists only this type, so the asymmetric
/// `WeatherSensor` stays out of it.
final class StationSettings: Object {
    /// One settings object per station directory.
    @Persisted(primaryKey: true) var _id: String = "station"
    /// The device id sent with every reading; chosen on the first run.
    @Persisted var deviceId: String = ""
    /// How many times the station has run.
    @Persisted var runs: Int = 0
    /// Readings committed over all runs (uploaded or still pending).
    @Persisted var readingsCommitted: Int = 0
    /// When the last run started.
    @Persisted var lastRunAt: Date?
}

/// The settings of this run, saved in the local realm.
///
/// The settings are not essential to streaming: if the local realm cannot be
/// opened or written, the station warns once and goes on with this run's
/// values (a new device id unless `--device-id` is given).
@MainActor
struct Station {
    private(set) var deviceId: String
    private(set) var runs = 1
    private(set) var readingsCommitted = 0
    /// Why the settings are not being saved, if they are not.
    private(set) var warning: String?
    private var realm: Realm?
    private var settings: StationSettings?

    /// Opens the local settings realm at `path` (its configuration lists
    /// only `StationSettings`, as the seed's note asks), creating the
    /// settings on the first run, and counts this run.
    init(path: String, deviceId requested: String?) {
        deviceId = requested ?? "WX" + String(UInt32.random(in: 0..<UInt32.max), radix: 36).uppercased()
        do {
            let configuration = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [StationSettings.self])
            let realm = try Realm(configuration: configuration)
            let settings: StationSettings
            if let existing = try realm.object(ofType: StationSettings.self, forPrimaryKey: "station") {
                settings = existing
                try realm.write {
                    if let requested { existing.deviceId = requested }
                    existing.runs += 1
                    existing.lastRunAt = Date()
                }
            } else {
                let newId = deviceId
                settings = try realm.write {
                    realm.create(StationSettings.self, value: ["_id": "station", "deviceId": newId, "runs": 1, "lastRunAt": Date()])
                }
            }
            self.realm = realm
            self.settings = settings
            deviceId = settings.deviceId
            runs = settings.runs
            readingsCommitted = settings.readingsCommitted
        } catch {
            warning = "the station's settings in \(path) are not saved (\(error)); this run uses device id \(deviceId)"
        }
    }

    /// Adds `count` readings to the total kept in the settings.
    mutating func addReadings(_ count: Int) {
        readingsCommitted += count
        guard let realm, let settings else { return }
        do {
            try realm.write { settings.readingsCommitted += count }
        } catch {
            warning = "the station's settings could not be updated: \(error)"
        }
    }
}
