import Foundation
import Testing
@testable import DataIngest
import IngestSupport
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

/// The server side of the power-cut harness (Docs/Reliability.md, "Power
/// loss"): `ingest-server` runs in a qemu guest (`Scripts/power-guest.sh`,
/// its SQLite sink with `synchronous=FULL` on the guest's ext4 disk), a real
/// client on the host uploads to it through a forwarded port on 127.0.0.1,
/// and the test cuts the guest's power right after the server answered an
/// upload (stored, but the client never sees the acknowledgement) or at a
/// random instant. The guest is booted again on the same disk; the client
/// retries. At the end every committed object must be in the sink once.
///
/// `INGEST_POWER_SERVER_CUTS` (default 4) sets the number of cuts.
@Suite(.serialized) struct ServerPowerCutTests {
    /// A guest running ingest-server; its serial output is read on a thread.
    final class ServerGuest: @unchecked Sendable {  // state in a LockedBox
        struct State {
            var pid: Int32 = 0
            var listening = false
            var appId: String?
            var cuts = 0
            var lines: [String] = []
            /// qemu's output ended (it was killed, or could not start).
            var exited = false
            var boots = 0
        }
        let script: String
        let guest: String
        let disk: String
        let port: UInt16
        let state = LockedBox(State())

        init(script: String, guest: String, disk: String, port: UInt16) {
            self.script = script
            self.guest = guest
            self.disk = disk
            self.port = port
        }

        var listening: Bool { state.withLock { $0.listening } }

        func boot() throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [
                script, "run", guest, disk, "ext4", "ingest-server", "--data-dir", "/data/server",
                "--host", "0.0.0.0", "--port", "8080",
            ]
            process.environment = ProcessInfo.processInfo.environment.merging(["POWER_GUEST_PORT": String(port)]) { $1 }
            let pipe = Pipe()
            process.standardOutput = pipe
            // qemu's own complaints (a forward it could not set up) go to the output too.
            process.standardError = pipe
            try process.run()
            state.withLock {
                $0.pid = process.processIdentifier
                $0.listening = false
                $0.exited = false
                $0.lines = []
                $0.boots += 1
            }
            let boot = state.withLock { $0.boots }
            let fd = pipe.fileHandleForReading.fileDescriptor
            let state = self.state
            let reader = Thread {
                var buffer: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = read(fd, &chunk, chunk.count)
                    if n <= 0 { break }
                    buffer += chunk[..<n]
                    while let newline = buffer.firstIndex(of: 10) {
                        let line = String(decoding: buffer[..<newline], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                        buffer.removeSubrange(...newline)
                        state.withLock { s in
                            guard s.boots == boot else { return }  // a late line of an earlier boot
                            s.lines.append(line)
                            if line.contains("listening on") { s.listening = true }
                            // The banner is a log line on standard error: "… notice ingest-server: app=<id> [ingest_server] app <id> (development mode): …".
                            if s.appId == nil, line.contains("(development mode)"), let start = line.range(of: "app=") {
                                s.appId = String(line[start.upperBound...].prefix { $0 != " " })
                            }
                        }
                    }
                }
                reap(process, within: 60)
                state.withLock { s in if s.boots == boot { s.exited = true } }
            }
            reader.start()
        }

        /// Cuts the power (SIGKILL to qemu; idempotent for one boot). A boot
        /// that never came up is not counted as a cut.
        func cut() {
            state.withLock { s in
                guard s.pid > 0 else { return }
                kill(s.pid, SIGKILL)
                s.pid = 0
                if s.listening { s.cuts += 1 }
                s.listening = false
            }
        }
    }

    /// Cuts the guest's power when the server has answered an armed upload:
    /// the segment is stored, and the client gets a connection error instead.
    final class CuttingTransport: SyncTransport, @unchecked Sendable {  // state in a LockedBox
        let inner = HTTPClientTransport()
        let guest: ServerGuest
        /// Uploads to let through before the next cut (nil: disarmed).
        let countdown = LockedBox<Int?>(nil)
        let answeredThenCut = LockedBox(0)

        init(guest: ServerGuest) { self.guest = guest }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let response = try await inner.send(request)
            guard request.url.path.hasSuffix("/ingest"), response.status == 200 else { return response }
            let cutNow = countdown.withLock { value -> Bool in
                guard let left = value else { return false }
                if left <= 1 {
                    value = nil
                    return true
                }
                value = left - 1
                return false
            }
            guard cutNow else { return response }
            guest.cut()
            answeredThenCut.withLock { $0 += 1 }
            throw TransportError("power cut after the server answered the upload")
        }
    }

    /// Rows, distinct `seq` values, min and max `seq` of `SyncReading` in a copy of the sink.
    static func readSink(_ path: String) throws -> [Int64] {
        // Read-write: opening the copy recovers its WAL as the server would.
        let db = try SQLiteConnection(path: path)
        let statement = try db.makeStatement(sql: "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM SyncReading")
        guard try statement.step() else { return [] }
        return (0..<4).map { statement.int64(at: $0) }
    }

    @Test func aServerCutBetweenStoringAndAnsweringStoresEachSegmentOnce() async throws {
        guard PowerCutTests.enabled("ServerPowerCutTests") else { return }
        let cuts = ProcessInfo.processInfo.environment["INGEST_POWER_SERVER_CUTS"].flatMap(Int.init) ?? 4
        let dir = try TemporaryDirectory("power-server")
        let script = try PowerCutTests.copyScript(into: dir.path)
        let server = StoreCheck.childPath.replacingOccurrences(of: "store-crash-child", with: "ingest-server")
        let (built, output) = PowerCutTests.run([script, "build", dir.path("guest"), StoreCheck.childPath, server])
        try #require(built == 0, "building the guest failed: \(output.suffix(2000))")
        let disk = dir.path("server.img")
        let (made, text) = PowerCutTests.run([script, "disk", disk, "ext4", "320"])
        try #require(made == 0, "making the disk failed: \(text)")
        let guest = ServerGuest(script: script, guest: dir.path("guest"), disk: disk, port: try freeLoopbackPort())
        defer { guest.cut() }
        func bootAndWait() async throws {
            // qemu exits at once when it cannot forward the port yet (the last
            // guest's connections closing): try again, a bounded number of times.
            for attempt in 1...20 {
                try guest.boot()
                // "listening" comes first, the banner with the app id right after it.
                let up = await eventuallyAsync(timeout: 150) {
                    guest.state.withLock { ($0.listening && $0.appId != nil) || $0.exited }
                }
                let (listening, exited, lines) = guest.state.withLock { ($0.listening, $0.exited, $0.lines) }
                if up && listening && !exited { return }
                guest.cut()
                try #require(exited && attempt < 20, "the server's guest did not come up: \(lines.suffix(8))")
                await pauseAsync(0.5)
            }
        }
        try await bootAndWait()
        let appId = try #require(guest.state.withLock { $0.appId })
        let transport = CuttingTransport(guest: guest)
        var configuration = App.Configuration(
            baseURL: URL(string: "http://127.0.0.1:\(guest.port)")!, metadataDirectory: dir.path("metadata"))
        configuration.segmentStore.maxSegmentAgeMilliseconds = 200
        configuration.segmentStore.durability = .full
        configuration.sync.initialBackoff = 0.05
        configuration.sync.maximumBackoff = 0.5
        configuration.transport = transport
        let app = App(id: appId, configuration: configuration)
        let user = try await app.login(credentials: .anonymous)
        // Readings in transactions of 10, 100 every 0.2 s, until the cuts are done.
        let stop = LockedBox(false)
        let writer = Task.detached { () throws -> Int in
            let realm = try openSyncedRealm(user)
            var chunk = 0
            while !stop.withLock({ $0 }) && chunk < 2_000 {
                try writeReadings(realm, (chunk * 100)..<((chunk + 1) * 100), perTransaction: 10)
                chunk += 1
                await pauseAsync(0.2)
            }
            return chunk * 100
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<cuts {
            // Cut right after the server answered the k-th upload from now, or
            // at a random instant if that does not come within a few seconds.
            transport.countdown.withLock { $0 = Int.random(in: 1...3, using: &generator) }
            let before = guest.state.withLock { $0.cuts }
            let answered = await eventuallyAsync(timeout: Double.random(in: 3...8, using: &generator)) {
                guest.state.withLock { $0.cuts } > before
            }
            if !answered {
                transport.countdown.withLock { $0 = nil }
                guest.cut()
            }
            await pauseAsync(Double.random(in: 0...0.5, using: &generator))
            try await bootAndWait()
        }
        stop.withLock { $0 = true }
        let total = try await writer.value
        try await user.session.wait(for: .upload, timeout: 180)
        transport.countdown.withLock { $0 = nil }
        guest.cut()  // a last cut: what the sink holds now is what was synced
        // The sink and its write-ahead log, out of the ext4 image, after
        // replaying its journal as a mount would (debugfs reads the image as is).
        _ = PowerCutTests.run(["-c", "e2fsck -fy \(disk) >/dev/null 2>&1"])
        let sink = dir.path("sink.sqlite")
        for suffix in ["", "-wal"] {
            _ = PowerCutTests.run(["-c", "debugfs -R 'dump -p /server/\(appId).sqlite\(suffix) \(sink)\(suffix)' \(disk) 2>&1"])
        }
        let counts = try Self.readSink(sink)
        let stats = guest.state.withLock { $0.cuts }
        print(
            "server power cuts: \(stats) cuts (\(transport.answeredThenCut.withLock { $0 }) right after the server answered an upload), \(total) readings committed, sink rows/distinct/min/max \(counts)"
        )
        #expect(counts == [Int64(total), Int64(total), 0, Int64(total - 1)], "every committed reading once in the sink")
    }
}
