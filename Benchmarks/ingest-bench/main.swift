import ArgumentParser
import Foundation
import IngestCommandLine

// ingest-bench: DataIngest's measurements, each next to a baseline measured
// in the same run. Build and run in release mode:
//
//     swift run -c release ingest-bench            # readable table
//     swift run -c release ingest-bench --json     # JSON for tools
//     swift run -c release ingest-bench --filter bson
//
// Figures are only meaningful from a release build on an otherwise idle machine.

/// The command line (swift-argument-parser: `--help` is generated, usage errors exit 2).
struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-bench",
        abstract: "DataIngest's measurements, each next to a baseline measured in the same run.",
        discussion: """
            Groups, in the order they run: bson, create, store, sync, server, sinks, sqlite, pagesize, backlog, logger, forward, realm. \
            Figures are only meaningful from a release build on an otherwise idle machine.
            """)

    @Flag(help: "Print the figures as JSON.")
    var json = false

    @Option(
        help: ArgumentHelp("Run only the groups whose name contains this (e.g. bson).", valueName: "group"),
        transform: { $0.lowercased() })
    var filter: String?
}

/// The benchmark groups, in the order they run.
let groups: [(name: String, run: () throws -> [Figure])] = [
    ("bson", bsonBenchmarks),
    ("create", createBenchmarks),
    // INGEST_BENCH_STORE_SCALE (default 1) scales the object counts, for runs under valgrind.
    ("store", { try storeBenchmarks(scale: ProcessInfo.processInfo.environment["INGEST_BENCH_STORE_SCALE"].flatMap(Double.init) ?? 1) }),
    ("sync", syncBenchmarks),
    ("server", serverBenchmarks),
    ("sinks", sinkBenchmarks),
    ("sqlite", sqliteBenchmarks),
    ("pagesize", pageSizeBenchmarks),
    ("backlog", backlogBenchmarks),
    ("logger", loggerBenchmarks),
    ("forward", forwardBenchmarks),
    ("realm", realmBenchmarks),
]

let options = Options.parseOrExitWithUsageStatus()
#if DEBUG
FileHandle.standardError.write(Data("ingest-bench: warning: debug build; measure with `swift run -c release ingest-bench`\n".utf8))
#endif

var figures: [Figure] = []
for group in groups where options.filter.map({ group.name.contains($0) }) ?? true {
    do {
        let before = MachineCPUTime.now()
        figures += try group.run()
        if let before, let stolen = MachineCPUTime.now()?.stealPercent(since: before) {
            figures.append(
                Figure(
                    group: group.name, name: "steal: CPU time the hypervisor took while the group ran, share of the CPUs' busy time",
                    value: stolen, unit: "%"))
        }
    } catch {
        FileHandle.standardError.write(Data("ingest-bench: group \(group.name) failed: \(error)\n".utf8))
        exit(1)
    }
}
Report(figures: figures).print(json: options.json)
