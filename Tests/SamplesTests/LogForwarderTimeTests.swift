#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import IngestTestSupport

/// The times `ingest-forward` reads from syslog headers and JSON lines, as
/// the server stores them (milliseconds since 1970 in its SQLite), through
/// the built binary and a real ingest-server. The parser reads them by hand:
/// Foundation's formatters go through ICU, which trapped on fuzzed lines.
@Suite struct LogForwarderTimeTests {
    func forward(_ lines: [String], format: String, in directory: TemporaryDirectory, server: SampleServer) throws {
        let input = directory.path + "/\(format).txt"
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: input))
        let run = try runProcess(
            try builtExecutable("ingest-forward"),
            [
                "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward-\(format)",
                "--format", format, "--once", input,
            ],
            in: directory.path)
        #expect(run.status == 0, "\(run.errorOutput)")
    }

    /// The time stored for each line whose message is given, `none` when it has none.
    func times(_ server: SampleServer, _ messages: [String]) throws -> [String] {
        try messages.map { message in
            try server.query("SELECT coalesce(timestamp, 'none') FROM ForwardedLine WHERE message = '\(message)'").first ?? "missing"
        }
    }

    @Test func syslogTimes() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        var now = time(nil)
        var utc = tm()
        gmtime_r(&now, &utc)
        let year = Int(utc.tm_year) + 1900
        try forward(
            [
                "<13>1 2026-11-29T10:00:00.250Z h a - - - milliseconds",
                "<13>1 2026-11-29t10:00:00,5+01:00 h a - - - comma and offset",
                "<13>1 2026-11-29T10:00:00.123456789-0230 h a - - - nanoseconds",
                "<13>1 2026-12-31T23:59:60Z h a - - - leap second",
                "<13>1 2026-02-29T10:00:00Z h a - - - no such day",
                "<13>1 2026-11-29T24:00:00Z h a - - - no such hour",
                "<13>1 2026-11-29T10:00:00 h a - - - no offset",
                "<13>1 2026-11-29T10:00:00.Z h a - - - empty fraction",
                "<13>1 2026-11-29T10:00:01.\(String(repeating: "3", count: 130))Z h a - - - long fraction",
                "<13>Nov  9 10:00:02 host x: space before the day",
                "<13>nov 09 10:00:02 host x: lower case month",
                "<13>Feb 30 10:00:02 host x: BSD day that does not exist",
            ], format: "syslog", in: directory, server: server)
        #expect(
            try times(
                server,
                [
                    "milliseconds", "comma and offset", "nanoseconds", "leap second", "no such day", "no such hour", "no offset",
                    "empty fraction", "long fraction",
                ]) == [
                    "1795946400250", "1795942800500", "1795955400123", "1798761600000", "none", "none", "none", "none",
                    "1795946401333",
                ])
        // RFC 3164 has no year: the current one, in UTC.
        var november9 = tm()
        (november9.tm_year, november9.tm_mon, november9.tm_mday, november9.tm_hour, november9.tm_sec) = (Int32(year - 1900), 10, 9, 10, 2)
        let expected = String(Int(timegm(&november9)) * 1000)
        #expect(try times(server, ["space before the day", "lower case month"]) == [expected, expected])
        #expect(
            try server.query("SELECT format || ' ' || coalesce(timestamp, 'none') FROM ForwardedLine WHERE message LIKE 'Feb 30%'")
                == ["rfc3164 none"])
    }

    @Test func jsonTimes() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        try forward(
            [
                #"{"msg":"space","level":"info","timestamp":"2026-11-29 10:00:00.123456789-0230"}"#,
                #"{"msg":"before 1970","level":"info","time":"1969-12-31T23:00:00Z"}"#,
                #"{"msg":"leap day","level":"info","ts":"2000-02-29T12:00:00+00:00"}"#,
                #"{"msg":"year one","level":"info","@timestamp":"0001-01-01T00:00:00Z"}"#,
                #"{"msg":"offset 24 hours","level":"info","timestamp":"2026-11-29T10:00:00+24:00"}"#,
                #"{"msg":"combining mark","level":"info","timestamp":"2026-11-29T10:00:0\u0317Z"}"#,
                #"{"msg":"trailing text","level":"info","timestamp":"2026-11-29T10:00:00Z!"}"#,
            ], format: "json", in: directory, server: server)
        #expect(
            try times(server, ["space", "before 1970", "leap day", "year one", "offset 24 hours", "combining mark", "trailing text"]) == [
                "1795955400123", "-3600000", "951825600000", "-62135596800000", "none", "none", "none",
            ])
    }
}
