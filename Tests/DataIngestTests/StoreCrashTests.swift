import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
#endif

@Suite struct StoreCrashTests {
    /// Starts the crash child; returns the process and its stdout.
    static func startChild(_ arguments: [String]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: StoreCheck.childPath)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, pipe)
    }

    /// A child commits numbered transactions and is killed with SIGKILL at a
    /// random moment, 60 times; every transaction it reported as committed is
    /// recovered exactly once, and no transaction is partial.
    @Test func killNineNeverLosesACommittedTransaction() throws {
        let dir = try StoreTempDirectory("crash")
        let storePath = dir.sub("store")
        var generator = SystemRandomNumberGenerator()
        var seen = Set<Int64>()
        var reportedTotal = 0
        var recoveredTotal = 0
        let started = Date()
        var rounds = 0
        for round in 0..<60 {
            guard Date().timeIntervalSince(started) < 45 else { break }
            rounds += 1
            let durability = ["interval", "full", "none"][round % 3]
            let (child, pipe) = try Self.startChild(["commit", storePath, durability, String(round * 10_000_000)])
            // Let it start (the first commits appear after ~10-30 ms), then kill at a random instant.
            usleep(UInt32.random(in: 20_000...150_000, using: &generator))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(!output.contains("error"), "child failed: \(output.prefix(300))")
            let reported = output.split(separator: "\n").dropLast().compactMap { Int64($0) }  // the last line may be torn
            reportedTotal += reported.count

            var configuration = SegmentStore.Configuration(directory: storePath)
            configuration.durability = .none
            let store = try SegmentStore.open(configuration)
            let recovered = try StoreCheck.transactions(in: store, acknowledge: true)
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
        #expect(reportedTotal > 0 && recoveredTotal >= reportedTotal)
    }

    @Test func anotherProcessHoldingTheStoreIsNamed() throws {
        let dir = try StoreTempDirectory("lock")
        let (child, pipe) = try Self.startChild(["hold", dir.sub("store")])
        defer {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        // Wait (bounded) for "ready".
        var line = Data()
        let deadline = Date().addingTimeInterval(20)
        while !String(decoding: line, as: UTF8.self).contains("ready") && Date() < deadline {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        #expect(String(decoding: line, as: UTF8.self).contains("ready"))
        #expect {
            try SegmentStore.open(SegmentStore.Configuration(directory: dir.sub("store")))
        } throws: { error in
            guard let error = error as? SegmentStoreError else { return false }
            return error.code == .locked && error.pid == child.processIdentifier && error.message.contains("\(child.processIdentifier)")
        }
    }
}
