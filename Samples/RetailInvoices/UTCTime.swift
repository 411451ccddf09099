import ArgumentParser
import Foundation

/// Milliseconds since 1970 to and from UTC calendar text, computed (no
/// locale, no time zone database): `2026-12-01T09:00:00.000Z`, `2026-12-01`.
enum UTCTime {
    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date of `days` since 1970-01-01 (`civil_from_days`).
    static func date(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `1764579600000` → `2026-12-01T09:00:00.000Z`.
    static func text(millis: Int64) -> String {
        let (days, inDay) = floorDivision(millis, 86_400_000)
        let (year, month, day) = date(days: Int(days))
        let ms = Int(inDay)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(ms / 3_600_000, 2) + ":"
            + pad(ms / 60_000 % 60, 2) + ":" + pad(ms / 1000 % 60, 2) + "." + pad(ms % 1000, 3) + "Z"
    }

    /// `2026-12-01` → the milliseconds of its first instant (UTC); nil if not a date.
    static func dayStart(_ text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), day >= 1, day <= daysIn(year: year, month: month) else { return nil }
        return Int64(days(year: year, month: month, day: day)) * 86_400_000
    }

    /// `2026-12-01T09:00:00Z` or `…T09:00:00.250Z` → milliseconds; nil otherwise.
    static func parse(_ text: String) -> Int64? {
        guard text.count >= 20, text.hasSuffix("Z"), let t = text.firstIndex(of: "T"),
              let day = dayStart(String(text[..<t])) else { return nil }
        let time = text[text.index(after: t)..<text.index(before: text.endIndex)]
        let pieces = time.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 3, pieces[0].count == 2, pieces[1].count == 2,
              let hour = Int(pieces[0]), let minute = Int(pieces[1]), hour < 24, minute < 60 else { return nil }
        let secondParts = pieces[2].split(separator: ".", omittingEmptySubsequences: false)
        guard secondParts[0].count == 2, let second = Int(secondParts[0]), second < 60 else { return nil }
        var ms = 0
        if secondParts.count == 2 {
            guard secondParts[1].count == 3, let fraction = Int(secondParts[1]) else { return nil }
            ms = fraction
        } else if secondParts.count > 2 {
            return nil
        }
        return day + Int64(((hour * 60 + minute) * 60 + second) * 1000 + ms)
    }

    /// For `--simulated-time`.
    static func parseOption(_ text: String) throws -> Int64 {
        guard let millis = parse(text) else {
            throw ValidationError("--simulated-time needs a UTC time such as 2026-12-01T09:00:00Z, not '\(text)'")
        }
        return millis
    }

    private static func daysIn(year: Int, month: Int) -> Int {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
