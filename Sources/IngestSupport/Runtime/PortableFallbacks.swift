#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one switch that forces every portable fallback of the hot paths.
///
/// The codecs and `create` read private standard-library layouts where
/// that is faster (`StringRepresentation` in IngestCore, which builds and
/// reads `String`s through their two words; `ExistentialPayload` in
/// DataIngest, which reads an `Any`'s inline value), each checked once per
/// process against values the runtime made itself, with a portable path
/// taken when the check fails. The portable paths run only on a toolchain
/// whose layout differs, so without this switch no test would run them.
///
/// `DATAINGEST_PORTABLE=1` in the environment (read once, at the first use)
/// makes every layout check answer "not verified", as a toolchain with
/// another layout would; type schemas then also cross-check the fields
/// `_forEachField` reports against `Mirror`. CI runs the client and core
/// suites once this way (Docs/Testing.md).
///
/// ```sh
/// DATAINGEST_PORTABLE=1 swift test --skip-build --filter 'IngestCoreTests|DataIngestTests'
/// ```
package enum PortableFallbacks {
    /// Whether `DATAINGEST_PORTABLE=1` was set when the process first asked.
    package static let areForced: Bool = {
        guard let value = getenv("DATAINGEST_PORTABLE") else { return false }
        return String(cString: value) == "1"
    }()
}
