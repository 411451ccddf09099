#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestCore
import Testing
import IngestTestSupport
@testable import IngestServer

/// Issue 18, item 3: everything the server writes is private to its user:
/// directories 0700, files 0600 (the state database, the SQLite sinks and
/// their -wal/-shm files, learned schemas, the development app id), whatever
/// the umask, in development mode, with a configuration file and for the
/// `apikey` command.
@Suite("File modes of the server's data", .serialized)
struct FileModeTests {
    /// Every directory and file under `root` whose mode is not private, as "path mode".
    func notPrivate(under root: String) -> [String] {
        var found: [String] = []
        var stack = [root]
        while let path = stack.popLast() {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let mode = info.st_mode & 0o7777
            if (info.st_mode & S_IFMT) == S_IFDIR {
                if mode != 0o700 { found.append("\(path) \(String(mode, radix: 8))") }
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                    stack.append(path + "/" + name)
                }
            } else if mode != 0o600 {
                found.append("\(path) \(String(mode, radix: 8))")
            }
        }
        return found
    }

    /// The names of the regular files under `root`, relative to it.
    func files(under root: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var names: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                names.append(path)
            }
        }
        return names.sorted()
    }

    @Test func theDevelopmentServersDataIsPrivate() throws {
        let directory = try TemporaryDirectory("e2e")
        let server = try IngestTestServer(config: nil, directory: directory)
        defer { server.stop() }
        let dataPath = directory.path + "/data"
        let appId = try server.developmentAppId()
        let token = try server.login(app: appId).access
        let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        #expect(try server.upload(app: appId, token: token, body: body).status == 200)
        let names = files(under: dataPath)
        #expect(names.contains("\(appId).sqlite"), "\(names)")
        #expect(names.contains("\(appId).schema.json"), "\(names)")
        #expect(names.contains("development-app-id"), "\(names)")
        #expect(names.contains("state.sqlite"), "\(names)")
        #expect(notPrivate(under: dataPath) == [])
    }

    @Test func aConfiguredServersDataIsPrivate() throws {
        let directory = try TemporaryDirectory("e2e")
        let config = """
            {"stateDirectory": "$DATA", "apps": [{"id": "shop", "auth": {"anon-user": {}},
              "schema": {"WeatherSensor": {"kind": "asymmetric", "properties": {"_id": "objectId", "deviceId": "string",
                "temperature": "double", "readings": "Reading[]"}},
                "Reading": {"kind": "embedded", "properties": {"value": "double", "note": "string?"}}},
              "sink": {"kind": "sqlite", "path": "sinks/nested/shop.sqlite"}}]}
            """
        let server = try IngestTestServer(config: config, directory: directory)
        defer { server.stop() }
        let token = try server.login(app: "shop").access
        let body = try makeSegment(store: .random(), number: 1, [[("WeatherSensor", sensor())]])
        #expect(try server.upload(app: "shop", token: token, body: body).status == 200)
        let dataPath = directory.path + "/data"
        #expect(files(under: dataPath).contains("sinks/nested/shop.sqlite"))
        #expect(notPrivate(under: dataPath) == [])
    }

    @Test func theAPIKeyCommandsStateIsPrivate() throws {
        let directory = try TemporaryDirectory("e2e")
        let dataPath = directory.path + "/fresh/data"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtExecutable("ingest-server"))
        process.arguments = ["apikey", "create", "--app", "nope-not-there", "--name", "k", "--data-dir", dataPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(reap(process, within: 60), "ingest-server apikey create did not exit within 60 s")
        // Whatever it answered (the development app id is made on the spot),
        // what it created is private.
        #expect(FileManager.default.fileExists(atPath: dataPath))
        #expect(notPrivate(under: directory.path + "/fresh") == [])
    }
}
