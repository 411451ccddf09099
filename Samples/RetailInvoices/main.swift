// RetailInvoices: a retail service recording invoices with IngestRecorder.
//
//   RetailInvoices run    [--app-id ID] [--base-url URL] [--stores N] [--tills N] [--checkouts N]
//                         [--retry-every K] [--data-dir DIR] [--upload-timeout S]
//                         [--seed N] [--simulated-time T]
//   RetailInvoices verify (--database PATH | --postgres URL) [--data-dir DIR]
//   RetailInvoices export (--database PATH | --postgres URL) --store S --date YYYY-MM-DD [--output FILE]
#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import IngestCommandLine

/// The command line: `run` and `verify` (swift-argument-parser: `--help` is
/// generated for each, usage errors exit 2).
struct RetailInvoices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "RetailInvoices",
        abstract: "A retail service recording hash-chained invoices with IngestRecorder, a check of what the server stored, a CSV export.",
        discussion: """
            Environment: DATAINGEST_APP_ID, DATAINGEST_BASE_URL.
            Exit status: 0 success (verify: every till intact), 1 failure or a broken link, 2 usage error.
            """,
        subcommands: [RunCommand.self, VerifyCommand.self, ExportCommand.self])

    /// No command given: a usage error.
    func run() throws {
        throw ValidationError("no command: give run, verify or export")
    }
}

/// `--data-dir`, of `run` and `verify`.
struct DataOptions: ParsableArguments {
    /// The tills' journals and pending data. Default `./retail-data`.
    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "The tills' journals (tills/) and pending data (default ./retail-data).", valueName: "dir"))
    var dataDirectoryOption: String?

    var dataDirectory: String { dataDirectoryOption ?? FileManager.default.currentDirectoryPath + "/retail-data" }
}

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("RetailInvoices: \(message)\n".utf8))
    exit(status)
}

func say(_ line: String) {
    print(line)
    fflush(nil)
}

await RetailInvoices.mainWithUsageStatus()
