// WeatherStation: the seed page's example ("Stream Data to Atlas - Swift
// SDK") as a program. It logs in anonymously, opens a synced realm holding
// only WeatherSensor, creates one reading per write transaction at a
// configurable rate, keeps its own settings in a local realm, and waits at
// the end until the server has acknowledged every reading.
#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import IngestCommandLine

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("WeatherStation: \(message)\n".utf8))
    exit(status)
}

let options = Options.parseOrExitWithUsageStatus()

/// Prints a line and flushes, so that progress appears at once also through a pipe.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

do {
    try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true)
} catch {
    fail("cannot create the data directory \(options.dataDirectory): \(error.localizedDescription)", status: 1)
}

// ---- The seed's code (steps 2 to 4), with the app id from the command line ----

let app = App(
    id: options.appId ?? "",
    configuration: App.Configuration(
        baseURL: options.baseURL, metadataDirectory: options.dataDirectory + "/dataingest"))

func login() async throws -> User {
    let user = try await app.login(credentials: .anonymous)
    return user
}

@MainActor
func openSyncedRealm(user: User) async throws -> Realm {
    var asymmetricConfig = user.flexibleSyncConfiguration()
    asymmetricConfig.objectTypes = [WeatherSensor.self]
    let asymmetricRealm = try await Realm(configuration: asymmetricConfig)
    return asymmetricRealm
}

@MainActor
func useRealm(_ asymmetricRealm: Realm, _ reading: Reading) throws {
    try asymmetricRealm.write {
        asymmetricRealm.create(
            WeatherSensor.self,
            value: [
                "_id": ObjectId.generate(),
                "deviceId": reading.deviceId,
                "temperatureInFahrenheit": reading.temperatureInFahrenheit,
                "barometricPressureInHg": reading.barometricPressureInHg,
                "windSpeedInMph": reading.windSpeedInMph,
            ])
    }
}

// ---- End of the seed's code ----

/// Monotonic seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

let user: User
do {
    user = try await login()
} catch {
    fail("could not log in to \(app.configuration.baseURL) as app \(app.id): \(error.localizedDescription)", status: 1)
}

var station = Station(path: options.dataDirectory + "/settings.realm", deviceId: options.deviceId)
if let warning = station.warning { FileHandle.standardError.write(Data("WeatherStation: warning: \(warning)\n".utf8)) }

let asymmetricRealm: Realm
do {
    asymmetricRealm = try await openSyncedRealm(user: user)
} catch {
    fail("could not open the synced realm: \(error.localizedDescription)", status: 1)
}

let limit = options.count.map { "\($0) readings" } ?? String(format: "%.0f s", options.duration ?? 0)
say(
    "station \(station.deviceId) (run \(station.runs)): user \(user.id), server \(app.configuration.baseURL), \(options.rate) readings/s for \(limit)"
)

var weather = Weather(deviceId: station.deviceId)
let start = now()
var written = 0
var nextProgress = start + 1
let session = user.session
let acknowledgedAtStart = session.storeCounters?.acknowledgedObjects ?? 0

@MainActor
func progressLine(elapsed: Double) -> String {
    let counters = session.storeCounters
    let uploaded = (counters?.acknowledgedObjects ?? 0) - acknowledgedAtStart
    return String(
        format: "%6.1fs  readings %d  pending %d  uploaded %d", elapsed, written,
        counters?.pendingObjects ?? 0, max(0, uploaded)) + "  (\(session.connectionState.rawValue))"
}

while true {
    let elapsed = now() - start
    // Readings due by now: reading i is due at i / rate seconds.
    var due = Int(elapsed * options.rate) + 1
    if let count = options.count { due = min(due, count) }
    if let duration = options.duration {
        due = min(due, Int((duration * options.rate).rounded(.up)))
    }
    do {
        while written < due {
            try useRealm(asymmetricRealm, weather.next())
            written += 1
        }
    } catch {
        fail("the write of reading \(written + 1) failed: \(error)", status: 1)
    }
    if options.progress && now() >= nextProgress {
        say(progressLine(elapsed: elapsed))
        nextProgress += 1
    }
    if let count = options.count, written >= count { break }
    if let duration = options.duration, elapsed >= duration || written >= Int((duration * options.rate).rounded(.up)) { break }
    // Sleep until the next reading is due (at most 100 ms, so progress stays live).
    let nextDue = start + Double(written) / options.rate
    let pause = min(0.1, max(0.0005, nextDue - now()))
    usleep(UInt32(pause * 1_000_000))
}
let writeSeconds = now() - start

station.addReadings(written)
say(
    String(
        format: "wrote %d readings in %.1f s (%.1f/s); waiting for the upload (at most %.0f s)",
        written, writeSeconds, Double(written) / max(writeSeconds, 0.001), options.uploadTimeout))
do {
    try await asymmetricRealm.syncSession?.wait(for: .upload, timeout: options.uploadTimeout)
} catch {
    say(progressLine(elapsed: now() - start))
    fail("not all readings were uploaded: \(error) (they stay in \(options.dataDirectory) and are uploaded on the next run)", status: 1)
}
let counters = session.storeCounters
let uploaded = (counters?.acknowledgedObjects ?? 0) - acknowledgedAtStart
say(
    "summary: device \(station.deviceId), "
        + String(
            format:
                "%d readings written, %d uploaded (including earlier leftovers), %d pending, %d quarantined, %.1f s; %d readings over %d runs",
            written, uploaded, counters?.pendingObjects ?? 0, counters?.quarantinedObjects ?? 0,
            now() - start, station.readingsCommitted, station.runs))
exit(0)
