import DataIngest
import Foundation
import IngestSupport

/// The formats `ingest-forward` understands.
enum LineFormat: String, CaseIterable {
    case plain, json, syslog
    /// Docker's json-file driver: `{"log":"…\n","stream":"stdout","time":"…"}`.
    case docker
    /// The CRI (Kubernetes) format: `TIME STREAM P|F MESSAGE`.
    case cri

    /// Container formats: a line is a part of a message, joined by the forwarder.
    var isContainer: Bool { self == .docker || self == .cri }
}

/// A line turned into the fields of a ``ForwardedLine``.
struct ParsedLine {
    var format: String
    var message: String
    var timestamp: Date?
    var level: String?
    var fields: AnyRealmValue = .none
}

enum LineParser {
    static func parse(_ line: String, as format: LineFormat) -> ParsedLine {
        switch format {
        case .plain: return ParsedLine(format: "plain", message: line)
        case .json: return json(line) ?? ParsedLine(format: "plain", message: line)
        case .syslog: return rfc5424(line) ?? rfc3164(line) ?? ParsedLine(format: "plain", message: line)
        case .docker, .cri:
            guard let part = containerPart(line, as: format) else { return ParsedLine(format: "plain", message: line) }
            return container(part.text, format: format, stream: part.stream, time: part.time, partial: part.partial)
        }
    }

    // MARK: JSON lines

    /// JSON lines are read with the project's own parser (`JSONValue`) and
    /// mapped straight to the fields: no Foundation objects or `Any` per line.
    /// Members keep duplicates; the last one wins, as it did in a dictionary.
    static let jsonOptions = JSONParsingOptions(maxDepth: 200, duplicateKeys: .keep)

    static func json(_ line: String) -> ParsedLine? {
        guard case .object(let members)? = try? JSONValue(parsing: line, options: jsonOptions),
            let fields = mixed(members)
        else { return nil }
        var parsed = ParsedLine(format: "json", message: line)
        if let text = lastString(members, "message") ?? lastString(members, "msg") { parsed.message = text }
        if let text = lastString(members, "level") ?? lastString(members, "severity") ?? lastString(members, "lvl") {
            parsed.level = text.lowercased()
        }
        for key in ["timestamp", "time", "ts", "@timestamp"] {
            guard let value = members.last(where: { $0.key == key })?.value else { continue }
            if case .string(let text) = value, let date = iso8601(text) {
                parsed.timestamp = date
                break
            }
            if case .number(let text) = value, let seconds = Double(text) {
                // Seconds, or milliseconds when the number is that large.
                parsed.timestamp = Date(timeIntervalSince1970: seconds > 1e11 ? seconds / 1000 : seconds)
                break
            }
        }
        parsed.fields = .dictionary(fields)
        return parsed
    }

    /// The last member `key` of an object, if it is a string.
    private static func lastString(_ members: [JSONValue.Member], _ key: String) -> String? {
        members.last(where: { $0.key == key })?.value.stringValue
    }

    /// An object's members as a document (keys made field names, the last
    /// of equal keys kept); `nil` if a number in it is out of `Double`'s range.
    static func mixed(_ members: [JSONValue.Member]) -> [String: AnyRealmValue]? {
        var result: [String: AnyRealmValue] = [:]
        result.reserveCapacity(members.count)
        for member in members {
            guard let value = mixed(member.value) else { return nil }
            result[fieldName(member.key)] = value
        }
        return result
    }

    /// A number without fraction or exponent that fits `Int` is an `int`,
    /// any other a `double`; `null` is none.
    static func mixed(_ value: JSONValue) -> AnyRealmValue? {
        switch value {
        case .object(let members): return mixed(members).map { .dictionary($0) }
        case .array(let values):
            var list: [AnyRealmValue] = []
            list.reserveCapacity(values.count)
            for value in values {
                guard let item = mixed(value) else { return nil }
                list.append(item)
            }
            return .list(list)
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .null: return AnyRealmValue.none
        case .number(let text):
            // Int(_:) reads only a sign and digits: a fraction or exponent is a double.
            if let exact = Int(text) { return .int(exact) }
            guard let double = Double(text), double.isFinite else { return nil }
            return .double(double)
        }
    }

    /// Document field names may not contain `.` or NUL or start with `$`.
    static func fieldName(_ key: String) -> String {
        guard !key.isEmpty else { return "_" }
        var scalars = String.UnicodeScalarView()
        for (index, scalar) in key.unicodeScalars.enumerated() {
            scalars.append(scalar == "." || scalar == "\0" || (index == 0 && scalar == "$") ? "_" : scalar)
        }
        return String(scalars)
    }

    /// An ISO 8601 time with its offset, the shape ``RFC3339Timestamp``
    /// reads. Read by hand, not with Foundation's formatters: those go
    /// through ICU, which trapped on fuzzed lines (a combining mark in the
    /// time; a division by zero inside ICU's `SimpleDateFormat::subParse`).
    static func iso8601(_ text: String) -> Date? {
        RFC3339Timestamp(text)?.date
    }

    // MARK: syslog

    static let severities = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]

    /// `<PRI>` at the start: (facility, severity, rest).
    static func priority(_ line: Substring) -> (Int, Int, Substring)? {
        guard line.first == "<", let close = line.firstIndex(of: ">") else { return nil }
        let digits = line[line.index(after: line.startIndex)..<close]
        // Digits only: Int("-1") parses, and a negative PRI made a negative
        // severity index, a trap (found with the syslog fuzz harness;
        // LogForwarderTests.fuzzingFindsAreForwardedNotCrashing).
        guard (1...3).contains(digits.utf8.count), digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let pri = Int(digits), pri <= 191
        else { return nil }
        return (pri / 8, pri % 8, line[line.index(after: close)...])
    }

    /// RFC 5424: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD] MSG`.
    static func rfc5424(_ line: String) -> ParsedLine? {
        guard let (facility, severity, rest) = priority(Substring(line)), rest.hasPrefix("1 ") else { return nil }
        var remaining = rest.dropFirst(2)
        var header: [String] = []
        for _ in 0..<5 {
            guard let space = remaining.firstIndex(of: " ") else { return nil }
            header.append(String(remaining[..<space]))
            remaining = remaining[remaining.index(after: space)...]
        }
        // Structured data: "-" or one or more [id k="v" ...] elements.
        var structured = ""
        if remaining.hasPrefix("-") {
            remaining = remaining.dropFirst()
        } else if remaining.hasPrefix("[") {
            var depthEnd = remaining.startIndex
            var inQuotes = false
            var escaped = false
            var index = remaining.startIndex
            while index < remaining.endIndex {
                let c = remaining[index]
                if escaped {
                    escaped = false
                } else if c == "\\" {
                    escaped = true
                } else if c == "\"" {
                    inQuotes.toggle()
                } else if c == "]" && !inQuotes {
                    depthEnd = remaining.index(after: index)
                    if depthEnd == remaining.endIndex || remaining[depthEnd] != "[" { break }
                }
                index = remaining.index(after: index)
            }
            structured = String(remaining[..<depthEnd])
            remaining = remaining[depthEnd...]
        } else {
            return nil
        }
        if remaining.hasPrefix(" ") { remaining = remaining.dropFirst() }
        var message = String(remaining)
        if message.hasPrefix("\u{FEFF}") { message.removeFirst() }
        var fields: [String: AnyRealmValue] = [
            "facility": .int(facility), "severity": .int(severity),
        ]
        let names = ["timestamp", "hostname", "appName", "procId", "msgId"]
        for (name, value) in zip(names, header) where value != "-" { fields[name] = .string(value) }
        if !structured.isEmpty { fields["structuredData"] = .string(structured) }
        return ParsedLine(
            format: "rfc5424", message: message, timestamp: header[0] == "-" ? nil : iso8601(header[0]),
            level: severities[severity], fields: .dictionary(fields))
    }

    /// RFC 3164 (BSD): `<PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PID]: MSG`.
    static func rfc3164(_ line: String) -> ParsedLine? {
        guard let (facility, severity, rest) = priority(Substring(line)) else { return nil }
        var fields: [String: AnyRealmValue] = ["facility": .int(facility), "severity": .int(severity)]
        var remaining = rest
        var timestamp: Date?
        if remaining.count >= 16, let date = bsdDate(String(remaining.prefix(15))), remaining.dropFirst(15).first == " " {
            timestamp = date
            remaining = remaining.dropFirst(16)
            if let space = remaining.firstIndex(of: " ") {
                fields["hostname"] = .string(String(remaining[..<space]))
                remaining = remaining[remaining.index(after: space)...]
            }
        }
        // TAG[PID]: or TAG:
        if let colon = remaining.firstIndex(of: ":"), remaining.distance(from: remaining.startIndex, to: colon) <= 48,
            !remaining[..<colon].contains(" ")
        {
            var tag = remaining[..<colon]
            if let open = tag.firstIndex(of: "["), tag.last == "]" {
                fields["procId"] = .string(String(tag[tag.index(after: open)..<tag.index(before: tag.endIndex)]))
                tag = tag[..<open]
            }
            fields["appName"] = .string(String(tag))
            remaining = remaining[remaining.index(after: colon)...]
            if remaining.hasPrefix(" ") { remaining = remaining.dropFirst() }
        }
        return ParsedLine(
            format: "rfc3164", message: String(remaining), timestamp: timestamp,
            level: severities[severity], fields: .dictionary(fields))
    }

    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// `Mmm dd hh:mm:ss` (the day as two digits or a space and a digit; the
    /// month's name in any case) in the current year, UTC; `nil` when the
    /// day does not exist in that year. Read by hand, as ``iso8601(_:)`` is.
    static func bsdDate(_ text: String) -> Date? {
        var text = text
        let fields = text.withUTF8 { b -> (month: Int, day: Int, hour: Int, minute: Int, second: Int)? in
            guard b.count == 15, b[3] == UInt8(ascii: " "), b[6] == UInt8(ascii: " "), b[9] == UInt8(ascii: ":"),
                b[12] == UInt8(ascii: ":"), let month = months.firstIndex(of: String(decoding: b[0..<3], as: UTF8.self).lowercased()),
                let day = b[4] == UInt8(ascii: " ") ? b.digits(5, 1) : b.digits(4, 2),
                let hour = b.digits(7, 2), let minute = b.digits(10, 2), let second = b.digits(13, 2)
            else { return nil }
            return (month + 1, day, hour, minute, second)
        }
        guard let fields else { return nil }
        var now = time(nil)
        var utc = tm()
        gmtime_r(&now, &utc)
        let time = RFC3339Timestamp(
            year: Int(utc.tm_year) + 1900, month: fields.month, day: fields.day, hour: fields.hour, minute: fields.minute,
            second: fields.second)
        return time?.date
    }

    // MARK: Container logs

    /// One line of a container log: a message, or a part of one (`partial`:
    /// more parts follow, joined by the forwarder before the message is sent).
    struct ContainerPart {
        var stream: String
        var time: Date?
        var partial: Bool
        var text: String
    }

    static func containerPart(_ line: String, as format: LineFormat) -> ContainerPart? {
        format == .docker ? dockerPart(line) : criPart(line)
    }

    /// Docker's json-file line: `log` ends with `\n` unless the daemon split
    /// a long line (16 KiB) into parts; the `\n` is not part of the message.
    static func dockerPart(_ line: String) -> ContainerPart? {
        guard let value = try? JSONValue(parsing: line, options: JSONParsingOptions()), case .object = value,
            var text = value["log"]?.stringValue
        else { return nil }
        let partial = !text.hasSuffix("\n")
        if !partial { text.removeLast() }
        let stream = value["stream"]?.stringValue ?? "stdout"
        return ContainerPart(stream: stream, time: value["time"]?.stringValue.flatMap(iso8601), partial: partial, text: text)
    }

    /// CRI: `2024-01-01T00:00:00.123456789Z stdout F message`; the tag is
    /// `P` (partial: the message continues on the next line of the stream)
    /// or `F` (full), possibly with more tags after a `:`.
    static func criPart(_ line: String) -> ContainerPart? {
        let utf8 = line.utf8
        guard let firstSpace = utf8.firstIndex(of: 32) else { return nil }
        let afterTime = utf8.index(after: firstSpace)
        guard let secondSpace = utf8[afterTime...].firstIndex(of: 32) else { return nil }
        let stream = String(line[afterTime..<secondSpace])
        guard stream == "stdout" || stream == "stderr", let time = iso8601(String(line[..<firstSpace])) else { return nil }
        let afterStream = utf8.index(after: secondSpace)
        let tagEnd = utf8[afterStream...].firstIndex(of: 32) ?? utf8.endIndex
        let tag = line[afterStream..<tagEnd].split(separator: ":", omittingEmptySubsequences: false).first ?? ""
        guard tag == "P" || tag == "F" else { return nil }
        let text = tagEnd == utf8.endIndex ? "" : String(line[utf8.index(after: tagEnd)...])
        return ContainerPart(stream: stream, time: time, partial: tag == "P", text: text)
    }

    /// A joined container message: `stream` in `fields` (and `partial` when
    /// it was sent before its last part: too long, or another stream's line
    /// came between its parts), `time` as the timestamp.
    static func container(_ message: String, format: LineFormat, stream: String, time: Date?, partial: Bool) -> ParsedLine {
        var fields: [String: AnyRealmValue] = ["stream": .string(stream)]
        if partial { fields["partial"] = .bool(true) }
        return ParsedLine(format: format.rawValue, message: message, timestamp: time, fields: .dictionary(fields))
    }
}

/// The fields of an ISO 8601 time with its offset, in the shape RFC 3339
/// writes (`2024-01-01T00:00:00Z`, `2024-01-01T00:00:00.123456789+02:00`):
/// `T`, `t` or a space between date and time; any number of fraction digits
/// after `.` or `,`; `Z`, `z`, `±HH:MM` or `±HHMM`. Each field must be in its
/// range and the day must exist in its month (proleptic Gregorian calendar);
/// a second of 60 (a leap second) is the next minute's first. Read without
/// Foundation.
struct RFC3339Timestamp {
    var year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0
    /// The fraction's first 18 digits as an integer, and how many of them.
    var fraction = 0, fractionDigits = 0
    var offsetSeconds = 0

    init?(_ text: String) {
        var text = text
        guard let parsed = text.withUTF8({ RFC3339Timestamp(bytes: $0) }) else { return nil }
        self = parsed
    }

    /// A time in UTC, whole seconds; `nil` when a field is out of range.
    init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
        guard isValid else { return nil }
    }

    private init() {}

    private init?(bytes b: UnsafeBufferPointer<UInt8>) {
        guard b.count >= 20, let year = b.digits(0, 4), b[4] == UInt8(ascii: "-"), let month = b.digits(5, 2), b[7] == UInt8(ascii: "-"),
            let day = b.digits(8, 2), [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(b[10]),
            let hour = b.digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = b.digits(14, 2), b[16] == UInt8(ascii: ":"),
            let second = b.digits(17, 2)
        else { return nil }
        self.init()
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
        guard isValid else { return nil }
        var i = 19
        if i < b.count && (b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: ",")) {
            i += 1
            let start = i
            while i < b.count, (48...57).contains(b[i]) {
                if fractionDigits < 18 {
                    fraction = fraction * 10 + Int(b[i] - 48)
                    fractionDigits += 1
                }
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), let hours = b.digits(i + 1, 2), hours < 24 {
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            let colon = i + 3 < b.count && b[i + 3] == UInt8(ascii: ":") ? 1 : 0
            guard let minutes = b.digits(i + 3 + colon, 2), minutes < 60 else { return nil }
            offsetSeconds = (hours * 60 + minutes) * 60 * sign
            i += 5 + colon
        } else {
            return nil
        }
        guard i == b.count else { return nil }
    }

    /// Every field in its range, the day one its month has.
    private var isValid: Bool {
        guard (1...12).contains(month), day >= 1, hour < 24, minute < 60, second <= 60, year >= 0, year <= 9999 else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= monthDays[month - 1]
    }

    /// Seconds since 1970-01-01 UTC, without the fraction, of the proleptic
    /// Gregorian date (Howard Hinnant's days_from_civil).
    var epochSeconds: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3_600 + minute * 60 + second - offsetSeconds
    }

    /// The time as a `Date`. It is made from milliseconds, as Foundation's
    /// formatters make theirs, so that a time written with milliseconds is
    /// that many milliseconds again when the SDK stores the `Date` (it
    /// rounds down to milliseconds).
    var date: Date {
        let milliseconds: Double
        if fractionDigits <= 3 {
            var scaled = fraction
            for _ in fractionDigits..<3 { scaled *= 10 }
            milliseconds = Double(epochSeconds * 1000 + scaled)
        } else {
            var divisor = 1
            for _ in 3..<fractionDigits { divisor *= 10 }
            milliseconds = Double(epochSeconds * 1000 + fraction / divisor) + Double(fraction % divisor) / Double(divisor)
        }
        return Date(timeIntervalSinceReferenceDate: milliseconds / 1000 - 978_307_200)
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// The number written in the `count` ASCII digits at `at`; nil if one
    /// is not a digit or they run past the end.
    fileprivate func digits(_ at: Int, _ count: Int) -> Int? {
        guard at >= 0, at + count <= self.count else { return nil }
        var value = 0
        for i in at..<(at + count) {
            guard (48...57).contains(self[i]) else { return nil }
            value = value * 10 + Int(self[i] - 48)
        }
        return value
    }
}
