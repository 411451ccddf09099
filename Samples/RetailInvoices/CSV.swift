import Foundation

/// RFC 4180 CSV: fields separated by commas, records ended by CRLF; a
/// field holding a comma, a double quote, CR or LF is put in double quotes,
/// its double quotes doubled; no other field is quoted.
enum CSV {
    static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func record(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }
}
