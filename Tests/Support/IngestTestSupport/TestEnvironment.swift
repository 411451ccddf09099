import Foundation

/// What the machine a test runs on has. Outside CI a test that needs a tool
/// or service the machine lacks is skipped and says why; under `CI=true`
/// (CI installs every tool and starts every service, see `.ci/run`) it
/// runs and fails on the missing piece instead, so nothing is skipped
/// unseen.
package enum TestEnvironment {
    /// Whether `CI=true` is set.
    package static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Whether a test that needs something runs: when it is `available`,
    /// and always under `CI=true`. For `.enabled(if:)` traits.
    ///
    /// ```swift
    /// @Suite(.enabled(if: TestEnvironment.runs(ifAvailable: PostgresTestService.isAvailable), PostgresTestService.skipReason))
    /// ```
    package static func runs(ifAvailable available: Bool) -> Bool { available || isCI }

    /// `value` (a tool's path, a service's URL) if there is one; otherwise
    /// prints `skipped: <what> is not available` and returns `nil` (the
    /// test returns early), or under `CI=true` throws.
    ///
    /// ```swift
    /// guard let curl = try TestEnvironment.require(executable("curl"), "curl") else { return }
    /// ```
    package static func require<T>(_ value: T?, _ what: String) throws -> T? {
        if let value { return value }
        if isCI { throw TestSupportError("\(what) is not available, and CI=true: CI installs every tool (Scripts/test.sh)") }
        print("skipped: \(what) is not available")
        return nil
    }

    /// The first of `/usr/bin`, `/usr/local/bin`, `/bin`, `/usr/sbin` holding
    /// an executable `name`.
    package static func executable(_ name: String) -> String? {
        ["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin"].map { $0 + "/" + name }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
