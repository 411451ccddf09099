import Foundation

// ingest-bench: DataIngest's measurements, each next to a baseline measured
// in the same run. Build and run in release mode:
//
//     swift run -c release ingest-bench            # readable table
//     swift run -c release ingest-bench --json     # JSON for tools
//     swift run -c release ingest-bench --filter bson
//
// Figures are only meaningful from a release build on an otherwise idle machine.

struct Options {
    var json = false
    var filter: String?

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--json": options.json = true
            case "--filter":
                guard let value = iterator.next() else { usage(exitCode: 64) }
                options.filter = value.lowercased()
            case "-h", "--help": usage(exitCode: 0)
            default:
                FileHandle.standardError.write(Data("ingest-bench: unknown argument '\(argument)'\n".utf8))
                usage(exitCode: 64)
            }
        }
        return options
    }

    static func usage(exitCode: Int32) -> Never {
        let text = """
        usage: ingest-bench [--json] [--filter GROUP]
          --json          print the figures as JSON
          --filter GROUP  run only the groups whose name contains GROUP (e.g. bson)

        """
        (exitCode == 0 ? FileHandle.standardOutput : FileHandle.standardError).write(Data(text.utf8))
        exit(exitCode)
    }
}

/// The benchmark groups, in the order they run.
let groups: [(name: String, run: () throws -> [Figure])] = [
    ("bson", bsonBenchmarks),
    ("create", createBenchmarks),
    ("store", { try storeBenchmarks() }),
    ("sync", syncBenchmarks),
    ("server", serverBenchmarks),
    ("sinks", sinkBenchmarks),
    ("sqlite", sqliteBenchmarks),
    ("backlog", backlogBenchmarks),
    ("logger", loggerBenchmarks),
    ("forward", forwardBenchmarks),
]

let options = Options.parse(CommandLine.arguments)
#if DEBUG
FileHandle.standardError.write(Data("ingest-bench: warning: debug build; measure with `swift run -c release ingest-bench`\n".utf8))
#endif

var figures: [Figure] = []
for group in groups where options.filter.map({ group.name.contains($0) }) ?? true {
    do {
        figures += try group.run()
    } catch {
        FileHandle.standardError.write(Data("ingest-bench: group \(group.name) failed: \(error)\n".utf8))
        exit(1)
    }
}
Report(figures: figures).print(json: options.json)
