// libFuzzer harness: the line parser of the log forwarder sample
// (Samples/LogForwarder/LineParser.swift): RFC 5424 and RFC 3164 syslog, JSON
// lines, Docker json-file and CRI container lines (one part each), plain lines. Built and run by Scripts/fuzz.sh, which compiles
// LineParser.swift into this harness (the sample is an executable target, so
// there is no library to link) against an instrumented DataIngest.
//
// The first byte picks the format the forwarder was started with
// (`--format plain|json|syslog|docker|cri`); the rest is one line as the forwarder reads
// it, decoded as UTF-8 with invalid sequences replaced (the forwarder splits
// at newlines first; the parser must not care if one is left).
import DataIngest

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let formats = LineFormat.allCases
    let format = formats[Int(data[0]) % formats.count]
    let line = String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self)
    let parsed = LineParser.parse(line, as: format)
    // What the forwarder stores must be a valid object: a known format, a
    // severity name when there is a level.
    switch parsed.format {
    case "plain", "json", "rfc3164", "rfc5424", "docker", "cri": break
    default: fatalError("unknown format \(parsed.format)")
    }
    if parsed.format.hasPrefix("rfc"), let level = parsed.level, !LineParser.severities.contains(level) {
        fatalError("unknown severity \(level)")
    }
    // A container line keeps its stream.
    if parsed.format == "docker" || parsed.format == "cri" {
        guard case .dictionary(let fields) = parsed.fields, case .string = fields["stream"] else { fatalError("no stream") }
    }
    return 0
}
