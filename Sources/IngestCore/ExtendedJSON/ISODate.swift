/// RFC 3339 date-times for relaxed Extended JSON `$date`, as milliseconds
/// since the Unix epoch. Plain integer calendar arithmetic (proleptic
/// Gregorian, UTC), no Foundation formatter: exact and locale-free. Package
/// access: the RetailInvoices sample's CSV and options use it too.
package enum ISODate {
    /// Milliseconds of 1970-01-01 .. 9999-12-31T23:59:59.999Z: the years
    /// relaxed Extended JSON writes as a string.
    package static let relaxedRange: ClosedRange<Int64> = 0...253_402_300_799_999

    /// `1970-01-01T00:00:00Z`, with `.mmm` only when milliseconds are not 0
    /// (always with `alwaysMilliseconds`: `1970-01-01T00:00:00.000Z`).
    package static func format(milliseconds: Int64, alwaysMilliseconds: Bool = false) -> String {
        var days = milliseconds / 86_400_000
        var rest = milliseconds % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        let seconds = rest / 1000
        let millis = rest % 1000
        var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        if millis != 0 || alwaysMilliseconds { text += "." + pad(millis, 3) }
        return text + "Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)`. Fractions
    /// beyond milliseconds are truncated. Nil when the text is not such a
    /// date-time or names an impossible date.
    package static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= b.count else { return nil }
            var value: Int64 = 0
            for k in 0..<width {
                let c = b[i + k]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                value = value * 10 + Int64(c - 0x30)
            }
            i += width
            return value
        }
        func literal(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = number(4), literal(UInt8(ascii: "-")), let month = number(2), literal(UInt8(ascii: "-")),
            let day = number(2)
        else { return nil }
        guard i < b.count, b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") else { return nil }
        i += 1
        guard let hour = number(2), literal(UInt8(ascii: ":")), let minute = number(2), literal(UInt8(ascii: ":")),
            let second = number(2)
        else { return nil }
        var millis: Int64 = 0
        if literal(UInt8(ascii: ".")) {
            var digits = 0
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 {
                if digits < 3 { millis = millis * 10 + Int64(b[i] - 0x30) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        var offsetMinutes: Int64 = 0
        if literal(UInt8(ascii: "Z")) || literal(UInt8(ascii: "z")) {
        } else if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign: Int64 = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let offsetHours = number(2) else { return nil }
            _ = literal(UInt8(ascii: ":"))
            guard let offsetMins = number(2), offsetHours < 24, offsetMins < 60 else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMins)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = self.days(fromYear: year, month: month, day: day)
        let local = ((days * 24 + hour) * 60 + minute) * 60 + second
        return (local - offsetMinutes * 60) * 1000 + millis
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    private static func days(fromYear y: Int64, month m: Int64, day d: Int64) -> Int64 {
        let y = m <= 2 ? y - 1 : y
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z: Int64) -> (Int64, Int64, Int64) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
