// RetailInvoices: a retail service recording invoices with IngestRecorder.
//
//   RetailInvoices run    [--app-id ID] [--base-url URL] [--stores N] [--tills N] [--checkouts N]
//                         [--retry-every K] [--data-dir DIR] [--upload-timeout S]
//   RetailInvoices verify --database PATH [--data-dir DIR]
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
        abstract: "A retail service recording invoices with IngestRecorder, and a check of what the server stored.",
        discussion: """
            Environment: DATAINGEST_APP_ID, DATAINGEST_BASE_URL.
            Exit status: 0 success (verify: totals match), 1 failure or mismatch, 2 usage error.
            """,
        subcommands: [RunCommand.self, VerifyCommand.self])

    /// No command given: a usage error.
    func run() throws {
        throw ValidationError("no command: give run or verify")
    }
}

/// Options both commands take.
struct LedgerOptions: ParsableArguments {
    /// The sample's ledger and pending data. Default `./retail-data`.
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "The ledger (ledger.json) and pending data (default ./retail-data).", valueName: "dir"))
    var dataDirectoryOption: String?

    var dataDirectory: String { dataDirectoryOption ?? FileManager.default.currentDirectoryPath + "/retail-data" }
    var ledgerPath: String { dataDirectory + "/ledger.json" }
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
