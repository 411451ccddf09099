import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The project's command lines (`ingest-forward`, the samples, `ingest-bench`)
// parse with swift-argument-parser (generated `--help`, shell completion
// scripts with `--generate-completion-script bash|zsh|fish`) and keep the exit
// statuses they always had: 0 after `--help` (printed to standard output), 2
// for a usage error (the message and the usage on standard error;
// swift-argument-parser's own default is 64, EX_USAGE).

/// The exit status of a usage error.
package let usageErrorStatus: Int32 = 2

extension ParsableArguments {
    /// Parses the process's arguments, or exits: 0 after printing the help
    /// it asked for, 2 (``usageErrorStatus``) after printing a usage error's
    /// message and the usage to standard error, swift-argument-parser's
    /// status for anything else.
    ///
    /// ```swift
    /// let options = WeatherStationOptions.parseOrExitWithUsageStatus()
    /// ```
    package static func parseOrExitWithUsageStatus(_ arguments: [String]? = nil) -> Self {
        do {
            return try parse(arguments)
        } catch {
            exitWithUsageStatus(error)
        }
    }

    /// Exits for a parsing `error` as ``parseOrExitWithUsageStatus(_:)`` does.
    package static func exitWithUsageStatus(_ error: any Error) -> Never {
        guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
        FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
        Glibc.exit(usageErrorStatus)
    }
}

extension ParsableCommand {
    /// The subcommand the process's arguments name (or this command), parsed
    /// and validated, or exits as ``ParsableArguments/parseOrExitWithUsageStatus(_:)``.
    ///
    /// ```swift
    /// switch RetailInvoices.parseAsRootOrExitWithUsageStatus() {
    /// case let run as RunCommand: try await run.run()
    /// …
    /// }
    /// ```
    package static func parseAsRootOrExitWithUsageStatus(_ arguments: [String]? = nil) -> any ParsableCommand {
        do {
            return try parseAsRoot(arguments)
        } catch {
            exitWithUsageStatus(error)
        }
    }
}

extension ParsableCommand {
    /// Parses the process's arguments into this command or the subcommand
    /// they name, runs it and exits 0 when `run` returns; errors exit as
    /// ``ParsableArguments/parseOrExitWithUsageStatus(_:)`` does (a
    /// `ValidationError` thrown by `run` is a usage error too, an
    /// `ExitCode` its own status, anything else 1).
    ///
    /// ```swift
    /// await RetailInvoices.mainWithUsageStatus()
    /// ```
    package static func mainWithUsageStatus(_ arguments: [String]? = nil) async -> Never {
        var command = parseAsRootOrExitWithUsageStatus(arguments)
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exitWithUsageStatus(error)
        }
        Glibc.exit(0)
    }
}
