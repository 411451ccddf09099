// sync-client-child: a client process the sync tests start (and kill -9).
//
//   sync-client-child seed            the seed page's code, literally, then waits for the upload
//   sync-client-child stream N T [P]  logs in anonymously, commits N numbered Reading objects in
//                                     transactions of T (P µs apart), printing "committed <last seq>" after each
//   sync-client-child exit-while-sealing N  commits N readings, exits while a segment is being
//                                     sealed (ExitWhileSealing.swift)
//   sync-client-child drain           restores the logged-in user and waits until nothing is pending
//   sync-client-child backlog N       logs in, prints "logged-in", waits for a line on stdin, commits N
//                                     readings, then prints "rss <KiB>" every 0.25 s for 3 s while the
//                                     session retries (the test stops the server first)
//   sync-client-child soak S D        the soak test's client (Soak.swift): commits numbered
//                                     transactions from seq S with durability D until told to stop
//
// The app id comes from $APP_ID, the server from $DATAINGEST_BASE_URL and the
// metadata directory from the current directory (App.Configuration's defaults).
import DataIngest
import Foundation

let INSERT_APP_ID_HERE = ProcessInfo.processInfo.environment["APP_ID"] ?? "missing-APP_ID"
let mode = CommandLine.arguments.dropFirst().first ?? "seed"

// ---- The seed page's code, unchanged (Stream Data to Atlas - Swift SDK) ----

class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

let app = App(id: INSERT_APP_ID_HERE)

func login() async throws -> User {
    let user = try await app.login(credentials: .anonymous)
    return user
}

@MainActor
func openSyncedRealm(user: User) async {
    do {
        var asymmetricConfig = user.flexibleSyncConfiguration()
        asymmetricConfig.objectTypes = [WeatherSensor.self]
        let asymmetricRealm = try await Realm(configuration: asymmetricConfig)
        await useRealm(asymmetricRealm, user)
    } catch {
        print("Error opening realm: \(error.localizedDescription)")
    }
}

@MainActor
func useRealm(_ asymmetricRealm: Realm, _ user: User) async {
    try! asymmetricRealm.write {
        asymmetricRealm.create(
            WeatherSensor.self,
            value: [
                "_id": ObjectId.generate(),
                "deviceId": "WX1278UIT",
                "temperatureInFahrenheit": 66.7,
                "barometricPressureInHg": 29.65,
                "windSpeedInMph": 2,
            ])
    }
}

// ---- End of the seed's code ----

/// A numbered reading for the crash tests: `seq` proves exactly-once.
class Reading: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var seq: Int
    @Persisted var payload: String
}

func finishLine() { fflush(nil) }

func finish(_ code: Int32) -> Never {
    fflush(nil)
    exit(code)
}

switch mode {
case "seed":
    do {
        let user = try await login()
        await openSyncedRealm(user: user)
    } catch {
        print("Error logging in: \(error.localizedDescription)")
    }
    // Not in the seed: wait for the upload so the process can exit.
    do {
        try await app.currentUser?.session.wait(for: .upload, timeout: 60)
        print("uploaded")
        finish(0)
    } catch {
        print("upload failed: \(error)")
        finish(1)
    }

case "stream":
    let total = Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 1000
    let perTransaction = Int(CommandLine.arguments.dropFirst(3).first ?? "") ?? 10
    let pauseMicroseconds = UInt32(CommandLine.arguments.dropFirst(4).first ?? "") ?? 0
    do {
        let user = try await app.login(credentials: .anonymous)
        var config = user.flexibleSyncConfiguration()
        config.objectTypes = [Reading.self]
        let realm = try Realm(configuration: config)
        var seq = 0
        while seq < total {
            let end = min(total, seq + perTransaction)
            try realm.write {
                for n in seq..<end {
                    realm.create(Reading.self, value: ["_id": ObjectId.generate(), "seq": n, "payload": "reading \(n)"])
                }
            }
            seq = end
            print("committed \(seq)")
            fflush(nil)
            if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
        }
        try await user.session.wait(for: .upload, timeout: 120)
        print("uploaded")
        finish(0)
    } catch {
        print("failed: \(error)")
        finish(1)
    }

case "backlog":
    let total = Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 100_000
    func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
    do {
        let user = try await app.login(credentials: .anonymous)
        print("logged-in")
        finishLine()
        _ = readLine()
        var config = user.flexibleSyncConfiguration()
        config.objectTypes = [Reading.self]
        let realm = try Realm(configuration: config)
        var seq = 0
        while seq < total {
            let end = min(total, seq + 1000)
            try realm.write {
                for n in seq..<end {
                    realm.create(Reading.self, value: ["_id": ObjectId.generate(), "seq": n, "payload": "reading \(n)"])
                }
            }
            seq = end
        }
        print("committed \(total)")
        for _ in 0..<13 {
            print("rss \(residentKiB()) pending \(user.session.storeCounters?.pendingObjects ?? -1)")
            finishLine()
            try await Task.sleep(nanoseconds: 250_000_000)
        }
        finish(0)
    } catch {
        print("failed: \(error)")
        finish(1)
    }

case "soak":
    let firstSeq = Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 0
    let durability = CommandLine.arguments.dropFirst(3).first ?? "interval"
    finish(await runSoak(appId: INSERT_APP_ID_HERE, firstSeq: firstSeq, durability: durability))

case "exit-while-sealing":
    finish(await exitWhileSealing(appId: INSERT_APP_ID_HERE))

case "drain":
    guard let user = app.currentUser else {
        print("no current user")
        finish(1)
    }
    do {
        try await user.session.wait(for: .upload, timeout: 120)
        print("uploaded")
        finish(0)
    } catch {
        print("failed: \(error)")
        finish(1)
    }

default:
    print("unknown mode \(mode)")
    finish(2)
}
