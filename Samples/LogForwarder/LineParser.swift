import DataIngest
import Foundation
import IngestSupport

/// The formats `ingest-forward` understands.
enum LineFormat: String, CaseIterable {
    case plain, json, syslog
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
        }
    }

    // MARK: JSON lines

    static func json(_ line: String) -> ParsedLine? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        var parsed = ParsedLine(format: "json", message: line)
        for key in ["message", "msg"] {
            if let text = object[key] as? String { parsed.message = text; break }
        }
        for key in ["level", "severity", "lvl"] {
            if let text = object[key] as? String { parsed.level = text.lowercased(); break }
        }
        for key in ["timestamp", "time", "ts", "@timestamp"] {
            if let text = object[key] as? String, let date = iso8601(text) { parsed.timestamp = date; break }
            if let seconds = object[key] as? Double, !(object[key] is Bool) {
                // Seconds, or milliseconds when the number is that large.
                parsed.timestamp = Date(timeIntervalSince1970: seconds > 1e11 ? seconds / 1000 : seconds)
                break
            }
        }
        parsed.fields = mixed(object)
        return parsed
    }

    static func mixed(_ value: Any) -> AnyRealmValue {
        switch value {
        case let dictionary as [String: Any]:
            var result: [String: AnyRealmValue] = [:]
            for (key, value) in dictionary { result[fieldName(key)] = mixed(value) }
            return .dictionary(result)
        case let array as [Any]: return .list(array.map(mixed))
        case let text as String: return .string(text)
        case let flag as Bool where type(of: value) == Bool.self: return .bool(flag)
        case let number as NSNumber:
            if String(cString: number.objCType) == "c" { return .bool(number.boolValue) }
            if let exact = Int(exactly: number.doubleValue), !String(describing: number).contains(".") { return .int(exact) }
            return .double(number.doubleValue)
        default: return .none
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

    static func iso8601(_ text: String) -> Date? {
        // Timestamps are ASCII; Foundation's formatters trap on some non-ASCII
        // text (a combining mark: "Incorrect range CFRange"), found by fuzzing.
        guard isASCII(text) else { return nil }
        return formatters.withLock { formatters in
            formatters.iso8601WithFraction.date(from: text) ?? formatters.iso8601.date(from: text)
        }
    }

    /// The date formatters, made once: making one costs far more than
    /// parsing with it (it was most of the time per syslog line). Behind a
    /// lock because Foundation's formatters are not safe to share between
    /// threads.
    struct Formatters {
        let iso8601WithFraction: ISO8601DateFormatter = {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter
        }()
        let iso8601 = ISO8601DateFormatter()
        let bsd: DateFormatter = {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy MMM d HH:mm:ss"
            return formatter
        }()
        let calendar = Calendar(identifier: .gregorian)
    }

    static let formatters = LockedBox(Formatters())

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

    static func isASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 }
    }

    /// `Mmm dd hh:mm:ss` in the current year, UTC.
    static func bsdDate(_ text: String) -> Date? {
        guard isASCII(text) else { return nil }  // see iso8601(_:)
        let normalized = text.replacingOccurrences(of: "  ", with: " ")
        return formatters.withLock { formatters in
            let year = formatters.calendar.component(.year, from: Date())
            return formatters.bsd.date(from: "\(year) \(normalized)")
        }
    }
}
