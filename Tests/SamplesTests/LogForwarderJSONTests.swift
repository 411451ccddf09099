import Foundation
import Testing
import IngestTestSupport

/// `ingest-forward --format json` against a real ingest-server: the mapping
/// of JSON lines to `ForwardedLine` fields that the sample's README
/// documents, checked in the server's SQLite.
@Suite struct LogForwarderJSONTests {
    @Test func jsonLinesBecomeTheDocumentedFields() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let forward = try builtExecutable("ingest-forward")
        let log = directory.path + "/service.jsonl"
        let lines = [
            // 0: message, level, an ISO 8601 time; numbers, nesting, renamed keys.
            #"{"message":"started","level":"INFO","timestamp":"2026-11-29T10:00:00.250Z","n":3,"x":1.5,"e":1e3,"big":12345678901234567890,"ok":false,"none":null,"a.b":1,"$c":2,"nested":{"d.e":[1,"two",{"f":true}]}}"#,
            // 1: msg when message is not a string; severity; epoch seconds.
            #"{"message":7,"msg":"from msg","severity":"Warn","ts":1795946400}"#,
            // 2: epoch milliseconds; the last of two equal keys wins; escapes.
            #"{"time":1795946400500,"msg":"first","msg":"last \"quoted\" \u00e9\n"}"#,
            // 3-6: not a JSON object, or a number out of range: the whole line, as plain.
            "not json",
            "[1,2]",
            #"{"v":1e400}"#,
            #"{"broken":"#,
        ]
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: log))
        let run = try runProcess(
            forward,
            [
                "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", directory.path + "/forward", "--format", "json",
                "--once", log,
            ],
            in: directory.path)
        #expect(run.status == 0, "\(run.errorOutput)")
        func value(_ row: Int, _ expression: String) throws -> String? {
            let offset = lines.prefix(row).reduce(0) { $0 + $1.utf8.count + 1 }
            return try server.query("SELECT \(expression) FROM ForwardedLine WHERE \"offset\" = \(offset)").first
        }
        #expect(try server.query("SELECT count(*) FROM ForwardedLine") == ["7"])
        #expect(try server.query("SELECT count(*) FROM ForwardedLine WHERE format = 'json'") == ["3"])

        #expect(try value(0, "message") == "started")
        // The first line has every field, so the development server made
        // `level` a string column and `timestamp` a date (milliseconds).
        #expect(try value(0, "level") == "info")
        #expect(try value(0, "json_extract(fields, '$.n') || ' ' || json_type(fields, '$.n')") == "3 integer")
        #expect(try value(0, "json_extract(fields, '$.x') || ' ' || json_type(fields, '$.x')") == "1.5 real")
        #expect(try value(0, "json_type(fields, '$.e') || ' ' || json_type(fields, '$.big')") == "real real")
        #expect(try value(0, "json_type(fields, '$.ok') || ' ' || json_type(fields, '$.none')") == "false null")
        #expect(try value(0, "json_extract(fields, '$.a_b') || ' ' || json_extract(fields, '$._c')") == "1 2")
        #expect(try value(0, "json_extract(fields, '$.nested.d_e[1]') || ' ' || json_type(fields, '$.nested.d_e[2].f')") == "two true")
        #expect(try value(1, "message || ' ' || level") == "from msg warn")
        #expect(try value(2, "message") == "last \"quoted\" é\n")
        #expect(try value(2, "json_extract(fields, '$.msg')") == "last \"quoted\" é\n")
        #expect(try [0, 1, 2].map { try value($0, "timestamp") } == ["1795946400250", "1795946400000", "1795946400500"])
        for row in 3...6 {
            #expect(try value(row, "format || ' ' || message") == "plain " + lines[row])
        }
    }
}
