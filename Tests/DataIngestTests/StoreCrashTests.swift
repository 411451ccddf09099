import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

@Suite struct StoreCrashTests {
    /// Starts the crash child; returns the process and its stdout.
    static func startChild(_ arguments: [String], environment: [String: String] = [:]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: StoreCheck.childPath)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, pipe)
    }

    /// Reads from `handle` until a newline arrives, the stream ends, or the timeout passes.
    static func readFirstLine(_ handle: FileHandle, timeoutMilliseconds: Int) -> Data {
        readOutput(handle, timeoutMilliseconds: timeoutMilliseconds, toNewline: true)
    }

    /// Reads from a killed child's `handle` until the stream ends, bounded:
    /// the end comes at once unless another process inherited the write end.
    static func readRest(_ handle: FileHandle) -> Data {
        readOutput(handle, timeoutMilliseconds: 30_000, toNewline: false)
    }

    private static func readOutput(_ handle: FileHandle, timeoutMilliseconds: Int, toNewline: Bool) -> Data {
        var data = Data()
        let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
        while !(toNewline && data.contains(0x0A)) {
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            guard left > 0 else { break }
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, left) > 0 else { break }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(handle.fileDescriptor, &buffer, buffer.count)
            guard n > 0 else { break }
            data.append(contentsOf: buffer[..<n])
        }
        return data
    }

    /// A child commits numbered transactions and is killed with SIGKILL at a
    /// random moment, 60 times; every transaction it reported as committed is
    /// recovered exactly once, and no transaction is partial.
    @Test func killNineNeverLosesACommittedTransaction() throws {
        let dir = try TemporaryDirectory("crash")
        let storePath = dir.path("store")
        var generator = SystemRandomNumberGenerator()
        var seen = Set<Int64>()
        var reportedTotal = 0
        var recoveredTotal = 0
        let started = Date()
        var rounds = 0
        var tornRounds = 0
        for round in 0..<60 {
            guard Date().timeIntervalSince(started) < 55 else { break }
            rounds += 1
            let durability = ["interval", "full", "none", "torn"][round % 4]
            let (child, pipe) = try Self.startChild(["commit", storePath, durability, String(round * 10_000_000)])
            // Wait (at most 10 s) for its first commit, so that a slow start under
            // load does not turn the round into a no-op, then kill at a random instant.
            var data = Self.readFirstLine(pipe.fileHandleForReading, timeoutMilliseconds: 10_000)
            usleep(UInt32.random(in: 0...100_000, using: &generator))
            reap(child, within: 0)
            data.append(Self.readRest(pipe.fileHandleForReading))
            let output = String(decoding: data, as: UTF8.self)
            #expect(!output.contains("error"), "child failed: \(output.prefix(300))")
            let reported = output.split(separator: "\n").dropLast().compactMap { Int64($0) }  // the last line may be torn
            reportedTotal += reported.count

            var configuration = SegmentStore.Configuration(directory: storePath)
            configuration.durability = .none
            let store = try SegmentStore.open(configuration)
            let recovered = try StoreCheck.transactions(in: store, acknowledge: true)
            tornRounds += store.quarantineReports().isEmpty ? 0 : 1  // a torn tail is cut, never quarantined
            try store.close()
            recoveredTotal += recovered.count
            for id in recovered {
                #expect(!seen.contains(id), "transaction \(id) recovered twice")
                seen.insert(id)
            }
            let missing = reported.filter { !seen.contains($0) }
            #expect(missing.isEmpty, "round \(round): \(missing.count) reported transactions lost, first \(missing.prefix(5))")
        }
        print("kill -9: \(rounds) rounds, \(reportedTotal) transactions reported, \(recoveredTotal) recovered")
        #expect(rounds >= 50)
        #expect(tornRounds == 0, "torn tails were reported as damage")
        #expect(reportedTotal > 0 && recoveredTotal >= reportedTotal)
    }

    /// The same with an encrypted store: kill -9 at random moments (torn
    /// writes included) never loses a reported transaction, recovers none
    /// twice, and a torn encrypted tail is cut back, never reported as damage.
    @Test func killNineWithAnEncryptionKeyNeverLosesACommittedTransaction() throws {
        let dir = try TemporaryDirectory("crash-crypt")
        let storePath = dir.path("store")
        let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
        let hex = key.map { String(format: "%02x", $0) }.joined()
        var generator = SystemRandomNumberGenerator()
        var seen = Set<Int64>()
        var reportedTotal = 0
        var rounds = 0
        var damageReports = 0
        let started = Date()
        for round in 0..<24 {
            guard Date().timeIntervalSince(started) < 30 else { break }
            rounds += 1
            let durability = ["torn", "interval", "full", "none"][round % 4]
            let (child, pipe) = try Self.startChild(
                ["commit", storePath, durability, String(round * 10_000_000)], environment: ["STORE_CRASH_KEY": hex])
            var data = Self.readFirstLine(pipe.fileHandleForReading, timeoutMilliseconds: 10_000)
            usleep(UInt32.random(in: 0...100_000, using: &generator))
            reap(child, within: 0)
            data.append(Self.readRest(pipe.fileHandleForReading))
            let output = String(decoding: data, as: UTF8.self)
            #expect(!output.contains("error"), "child failed: \(output.prefix(300))")
            let reported = output.split(separator: "\n").dropLast().compactMap { Int64($0) }
            reportedTotal += reported.count

            var configuration = SegmentStore.Configuration(directory: storePath)
            configuration.durability = .none
            configuration.encryptionKey = key
            let store = try SegmentStore.open(configuration)
            #expect(store.isEncrypted)
            let recovered = try StoreCheck.transactions(in: store, acknowledge: true)
            damageReports += store.quarantineReports().count
            try store.close()
            for id in recovered {
                #expect(!seen.contains(id), "transaction \(id) recovered twice")
                seen.insert(id)
            }
            let missing = reported.filter { !seen.contains($0) }
            #expect(missing.isEmpty, "round \(round): \(missing.count) reported transactions lost, first \(missing.prefix(5))")
        }
        print("kill -9 with a key: \(rounds) rounds, \(reportedTotal) transactions reported, \(seen.count) recovered")
        #expect(rounds >= 8)
        #expect(damageReports == 0, "torn encrypted tails were reported as damage")
        #expect(reportedTotal > 0 && seen.count >= reportedTotal)
    }

    @Test func anotherProcessHoldingTheStoreIsNamed() throws {
        let dir = try TemporaryDirectory("lock")
        let (child, pipe) = try Self.startChild(["hold", dir.path("store")])
        defer {
            reap(child, within: 0)
        }
        let line = Self.readFirstLine(pipe.fileHandleForReading, timeoutMilliseconds: 20_000)
        #expect(String(decoding: line, as: UTF8.self).contains("ready"))
        #expect {
            try SegmentStore.open(SegmentStore.Configuration(directory: dir.path("store")))
        } throws: { error in
            guard let error = error as? SegmentStoreError else { return false }
            return error.code == .locked && error.pid == child.processIdentifier && error.message.contains("\(child.processIdentifier)")
        }
    }
}
