import ArgumentParser
import IngestCore

/// Milliseconds since 1970 to and from UTC text, through IngestCore's
/// locale-free calendar arithmetic (the one Extended JSON's `$date` uses).
enum UTCTime {
    /// `1796169598000` → `2026-12-01T23:59:58.000Z` (always with milliseconds).
    static func text(millis: Int64) -> String {
        ISODate.format(milliseconds: millis, alwaysMilliseconds: true)
    }

    /// `2026-12-01` → the milliseconds of its first instant (UTC); nil if not a date.
    static func dayStart(_ text: String) -> Int64? {
        guard text.utf8.count == 10 else { return nil }
        return ISODate.parse(text + "T00:00:00Z")
    }

    /// For `--simulated-time`: an RFC 3339 time (`2026-12-01T09:00:00Z`, `…T10:00:00+01:00`).
    static func parseOption(_ text: String) throws -> Int64 {
        guard let millis = ISODate.parse(text) else {
            throw ValidationError("--simulated-time needs a UTC time such as 2026-12-01T09:00:00Z, not '\(text)'")
        }
        return millis
    }
}
