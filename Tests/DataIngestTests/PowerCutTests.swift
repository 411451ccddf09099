import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

/// Power loss, proven by cutting a virtual machine's power
/// (Docs/Reliability.md, "Power loss"): the crash child runs inside a qemu
/// guest (`Scripts/power-guest.sh`) on a virtual disk holding the store, and
/// the test kills qemu with SIGKILL: everything the guest kernel had not
/// written to the disk is gone. The guest is then booted again on the same
/// disk; the child recovers, reports what it found, and commits on.
///
/// Runs only with `INGEST_POWER=1` (`Scripts/power.sh`, CI's power-cut step).
/// Environment: `INGEST_POWER_CUTS` (cuts per durability level and file
/// system, default 3), `INGEST_POWER_SECONDS` (time bound of the cuts,
/// default 240; the final drain boots come after it), `INGEST_POWER_FILESYSTEMS`
/// (default `ext4,xfs`), `INGEST_POWER_LEVELS` (default
/// `full,interval,none,encrypted`; `encrypted` is an encrypted store with
/// `.interval`). Hours: `INGEST_POWER_CUTS=1000 INGEST_POWER_SECONDS=14400`.
@Suite(.serialized) struct PowerCutTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let script = repository + "/Scripts/power-guest.sh"

    struct Settings {
        var cuts = 3
        var seconds = 240.0
        var fileSystems = ["ext4", "xfs"]
        var levels = ["full", "interval", "none", "encrypted"]

        static func fromEnvironment() -> Settings {
            let env = ProcessInfo.processInfo.environment
            var s = Settings()
            if let v = env["INGEST_POWER_CUTS"].flatMap(Int.init) { s.cuts = v }
            if let v = env["INGEST_POWER_SECONDS"].flatMap(Double.init) { s.seconds = v }
            if let v = env["INGEST_POWER_FILESYSTEMS"] { s.fileSystems = v.split(separator: ",").map(String.init) }
            if let v = env["INGEST_POWER_LEVELS"] { s.levels = v.split(separator: ",").map(String.init) }
            return s
        }
    }

    /// A copy of the script in the test's directory: editing the repository
    /// while a long run boots the guest again and again must not change it.
    static func copyScript(into directory: String) throws -> String {
        let copy = directory + "/power-guest.sh"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: script, toPath: copy)
        return copy
    }

    /// Runs a command, returning its exit status and output.
    static func run(_ arguments: [String]) -> (Int32, String) {
        do {
            let result = try runProcess("/bin/bash", arguments, mergingOutput: true, timeout: 1_800)
            return (result.status, result.output)
        } catch { return (-1, "\(error)") }
    }

    /// Whether the harness runs: `INGEST_POWER=1` (Scripts/power.sh, CI's
    /// power-cut step) and the guest's packages installed. Asked for but not
    /// installed is a failure; not asked for, a skip with a message.
    static func enabled(_ name: String) -> Bool {
        guard ProcessInfo.processInfo.environment["INGEST_POWER"] == "1" else {
            print("\(name) skipped: set INGEST_POWER=1 to cut a virtual machine's power (Scripts/power.sh does)")
            return false
        }
        let (status, missing) = run([script, "check"])
        guard status == 0 else {
            Issue.record("the power-cut guest cannot be built: \(missing) (Scripts/power.sh installs POWER_PACKAGES)")
            return false
        }
        return true
    }

    @Test func powerCutsLoseOnlyWhatDurabilityAllows() throws {
        guard Self.enabled("PowerCutTests") else { return }
        let settings = Settings.fromEnvironment()
        let dir = try TemporaryDirectory("power")
        let script = try Self.copyScript(into: dir.path)
        // The guest is built from the crash child next to this test binary.
        let (built, output) = Self.run([script, "build", dir.path("guest"), StoreCheck.childPath])
        try #require(built == 0, "building the guest failed: \(output.suffix(2000))")
        let deadline = Date().addingTimeInterval(settings.seconds)
        var summaries: [PowerRun.Summary] = []
        // Round-robin over the variants so that a time bound still covers each.
        var runs: [PowerRun] = []
        for fileSystem in settings.fileSystems {
            for level in settings.levels {
                let disk = dir.path("\(fileSystem)-\(level).img")
                let (made, text) = Self.run([script, "disk", disk, fileSystem, "320"])
                try #require(made == 0, "making the \(fileSystem) disk failed: \(text)")
                runs.append(
                    PowerRun(
                        script: script, guest: dir.path("guest"), disk: disk, fileSystem: fileSystem, level: level,
                        seed: UInt64.random(in: 0...UInt64.max)))
            }
        }
        for cut in 0..<settings.cuts {
            for run in runs where Date() < deadline {
                run.boot(index: cut, cut: true)
            }
        }
        for run in runs {
            run.boot(index: settings.cuts, cut: false)  // recover and drain
            summaries.append(run.summary())
        }
        for summary in summaries {
            print("power cuts: \(summary.line)")
            for failure in summary.failures.prefix(20) { Issue.record("\(summary.name): \(failure)") }
        }
        let cuts = summaries.reduce(0) { $0 + $1.cuts }
        #expect(cuts >= min(settings.cuts, 2) * runs.count, "only \(cuts) power cuts ran in \(settings.seconds) s")
    }
}

/// One virtual disk, one durability level: booted again and again, its
/// power cut each time; the reports of every boot are checked together.
final class PowerRun {
    let script: String
    let guest: String
    let disk: String
    let fileSystem: String
    let level: String
    var random: SplitMix64

    struct Committed {
        let id: Int64
        let boot: Int
        /// Host monotonic seconds when the `C` line arrived.
        let at: Double
    }

    var committed: [Committed] = []
    /// Segment number → its transactions as reported (`S` lines), and transaction → segment.
    var segments: [UInt64: String] = [:]
    var transactionSegment: [Int64: UInt64] = [:]
    var recovered = Set<Int64>()
    var cutTimes: [Int: Double] = [:]
    var failures: [String] = []
    var reappeared = 0
    var cuts = 0
    var bootSeconds: [Double] = []
    var kinds: [String: Int] = [:]
    var finalDrained = false
    var quarantined = Set<String>()

    init(script: String, guest: String, disk: String, fileSystem: String, level: String, seed: UInt64) {
        self.script = script
        self.guest = guest
        self.disk = disk
        self.fileSystem = fileSystem
        self.level = level
        self.random = SplitMix64(seed: seed)
    }

    var name: String { "\(fileSystem) \(level)" }

    /// Boots the guest once. With `cut`, kills qemu at a random instant: while
    /// the store recovers, at a random time after open, or right after the
    /// k-th reported commit; without, lets the child drain and exit.
    func boot(index: Int, cut: Bool) {
        let durability = level == "encrypted" ? "interval" : level
        var arguments = [
            script, "run", guest, disk, fileSystem,
            "store-crash-child", "power", "/data/store", durability,
            String(index * 10_000_000), cut ? "-1" : "0",
        ]
        if level == "encrypted" { arguments.append(String(repeating: "5a", count: 32)) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        do { try process.run() } catch {
            failures.append("boot \(index): qemu did not start: \(error)")
            return
        }
        let pid = process.processIdentifier
        let plan = random.next() % 3
        let commitsBeforeCut = Int(random.next() % 3000) + 1
        let delay = Double(random.next() % 1500) / 1000
        let start = monotonicNow()
        var opened: Double?
        var began: Double?
        var killedAt: Double?
        var buffer = Data()
        var lines: [(Double, Substring)] = []
        var commitsThisBoot = 0
        let fd = pipe.fileHandleForReading.fileDescriptor
        // Bounded: 150 s for a boot (TCG under load), 300 s for the final drain.
        let limit = start + (cut ? 150 : 300)
        var ended = false
        func cutPower(_ reason: String) {
            guard killedAt == nil else { return }
            kill(pid, SIGKILL)
            killedAt = monotonicNow()
            kinds[reason, default: 0] += 1
        }
        while !ended {
            let now = monotonicNow()
            if now > limit {
                failures.append("boot \(index): no end within \(Int(limit - start)) s (began: \(began != nil), opened: \(opened != nil))")
                cutPower("timeout")
                break
            }
            if cut, killedAt == nil {
                if plan == 0, let began, now >= began + delay / 5 { cutPower("during recovery") }
                if plan == 1, let opened, now >= opened + delay { cutPower("at a random instant") }
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 5) >= 0 else { break }
            guard descriptor.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { ended = true }
            if n > 0 { buffer.append(contentsOf: chunk[..<n]) }
            let arrived = monotonicNow()
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                buffer.removeSubrange(buffer.startIndex...newline)
                if line == "B" { began = arrived }
                if line.hasPrefix("O ") { opened = arrived }
                if line.hasPrefix("C ") {
                    commitsThisBoot += 1
                    if cut && plan == 2 && commitsThisBoot >= commitsBeforeCut { cutPower("after a reported commit") }
                }
                // A line that arrives after the cut was sent before it.
                lines.append((arrived, Substring(line)))
            }
        }
        if killedAt == nil && cut { cutPower("at the end of the output") }
        if !reap(process, within: 60) { failures.append("boot \(index): qemu did not exit within 60 s of its output's end") }
        if let killedAt {
            cuts += 1
            cutTimes[index] = killedAt
        }
        if let began { bootSeconds.append(began - start) }
        for (at, line) in lines { handle(line, boot: index, at: at, final: !cut) }
        if !cut {
            finalDrained = lines.contains { $0.1 == "D" }
            if !finalDrained { failures.append("the final boot did not drain the store: \(lines.suffix(5).map(\.1))") }
        }
    }

    func handle(_ line: Substring, boot: Int, at: Double, final: Bool) {
        let fields = line.split(separator: " ", maxSplits: 2)
        guard let kind = fields.first else { return }
        switch kind {
        case "C":
            if fields.count > 1, let id = Int64(fields[1]) { committed.append(Committed(id: id, boot: boot, at: at)) }
        case "S":
            guard fields.count > 1, let number = UInt64(fields[1]) else { return }
            let content = fields.count > 2 ? String(fields[2]) : ""
            if let earlier = segments[number] {
                if earlier != content {
                    failures.append(
                        "boot \(boot): segment \(number) listed with other contents: \(earlier.prefix(80)) then \(content.prefix(80))")
                }
                reappeared += 1
                return
            }
            segments[number] = content
            for range in content.split(separator: ",") {
                let bounds = range.split(separator: "-").compactMap { Int64($0) }
                guard let low = bounds.first, let high = bounds.last, low <= high else { continue }
                for id in low...high {
                    if let other = transactionSegment[id], other != number {
                        failures.append("boot \(boot): transaction \(id) in segments \(other) and \(number)")
                    }
                    transactionSegment[id] = number
                    recovered.insert(id)
                }
            }
        case "Q":
            // Only the harness's own rejections belong in quarantine.
            // Reports stay in quarantine: each is counted once.
            if fields.count > 1, fields[1] != "rejected", quarantined.insert(String(line)).inserted {
                failures.append("boot \(boot): quarantined without damage: \(line)")
            }
        case "P", "E":
            failures.append("boot \(boot): \(line)")
        default:
            break
        }
    }

    struct Summary {
        let name: String
        let cuts: Int
        let line: String
        let failures: [String]
    }

    /// What was lost per cut, checked against the level: nothing with
    /// `full`; with `interval`, only transactions reported within the
    /// interval (plus the sync's duration) before the cut.
    func summary() -> Summary {
        var failures = self.failures
        let lost = committed.filter { !recovered.contains($0.id) }
        var lostPerBoot: [Int: [Committed]] = [:]
        for c in lost { lostPerBoot[c.boot, default: []].append(c) }
        let worst = lostPerBoot.values.map(\.count).max() ?? 0
        var oldest = 0.0
        for (boot, items) in lostPerBoot {
            guard let cut = cutTimes[boot] else { continue }
            for c in items { oldest = max(oldest, cut - c.at) }
        }
        switch level {
        case "full":
            if !lost.isEmpty {
                failures.append("\(lost.count) reported transactions lost with full durability, first \(lost.prefix(5).map(\.id))")
            }
        case "interval", "encrypted":
            // 100 ms interval; the sync's own duration under emulation, and the
            // serial line's latency, come on top (measured: see the summary).
            if oldest > 2.0 {
                failures.append("a transaction reported \(String(format: "%.3f", oldest)) s before the cut was lost (interval 100 ms)")
            }
        default:
            // `none`: what the kernel had not written back; sealed segments are
            // synced, so at most the seal age (200 ms here) plus sealing.
            if oldest > 35 { failures.append("a transaction reported \(String(format: "%.1f", oldest)) s before the cut was lost") }
        }
        let boots = bootSeconds.isEmpty ? 0 : bootSeconds.reduce(0, +) / Double(bootSeconds.count)
        let line =
            "\(name): \(cuts) cuts (\(kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))), "
            + "\(committed.count) transactions reported committed, \(recovered.count) recovered, \(lost.count) lost "
            + "(at most \(worst) in one cut, the oldest \(String(format: "%.3f", oldest)) s before its cut), "
            + "\(segments.count) segments uploaded, \(reappeared) listed again after a cut, "
            + "boot to open \(String(format: "%.1f", boots)) s on average, \(failures.count) failures"
        return Summary(name: name, cuts: cuts, line: line, failures: failures)
    }
}
