import Foundation
import Testing
import IngestTestSupport

/// Real clients against a real server process: curl and Python's http.client.
/// Each test is skipped (with a printed reason) if the tool is not installed.
@Suite struct HTTPClientCompatibilityTests {
    @Test func curlKeepAliveBodiesAndChunkedUploads() throws {
        let server = try HTTPTestServer()
        let base = "http://127.0.0.1:\(server.port)"
        guard let reuse = try TestEnvironment.require(runTool("curl", ["-sS", "-v", "\(base)/healthz", "\(base)/healthz"]), "curl") else {
            return
        }
        #expect(reuse.status == 0, "\(reuse.output)")
        #expect(reuse.output.components(separatedBy: #"{"status":"ok"}"#).count == 3)
        #expect(reuse.output.contains("Re-using existing connection"), "\(reuse.output)")

        let directory = try TemporaryDirectory("http")
        let input = directory.path + "/in.bin"
        let output = directory.path + "/out.bin"
        // 1.2 MB (over curl's 1 MiB threshold for `Expect: 100-continue`):
        // a random 4 KiB block repeated, each copy tagged with its index.
        var random = SplitMix64(seed: 7)
        let block = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }
        var payload: [UInt8] = []
        for i in 0..<300 { payload += block; payload[payload.count - 1] = UInt8(truncatingIfNeeded: i) }
        try Data(payload).write(to: URL(fileURLWithPath: input))
        for extra in [[String](), ["-H", "Transfer-Encoding: chunked"], ["--http1.0"]] {
            try? FileManager.default.removeItem(atPath: output)
            let result = try runTool(
                "curl", ["-sS", "-f", "-X", "POST", "--data-binary", "@\(input)", "-o", output] + extra + ["\(base)/_test/echo"])
            #expect(result?.status == 0, "\(extra): \(result?.output ?? "")")
            #expect(FileManager.default.contents(atPath: output) == Data(payload), "curl \(extra) body mismatch")
        }
    }

    @Test func pythonHTTPClient() throws {
        let server = try HTTPTestServer()
        let script = """
            import http.client, sys
            c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=5)
            c.request('GET', '/healthz'); r = c.getresponse()
            assert r.status == 200, r.status
            assert r.read() == b'{"status":"ok"}'
            sock = c.sock
            c.request('POST', '/_test/echo', body=b'x' * 100000); r = c.getresponse()
            assert r.status == 200 and r.read() == b'x' * 100000
            def parts():
                yield b'abc'
                yield b'defg'
            c.request('POST', '/_test/echo', body=parts()); r = c.getresponse()
            assert r.getheader('X-Echo-Body-Bytes') == '7' and r.read() == b'abcdefg'
            c.request('DELETE', '/healthz'); r = c.getresponse()
            assert r.status == 405 and r.getheader('Allow') == 'GET, HEAD, OPTIONS'; r.read()
            c.request('HEAD', '/healthz'); r = c.getresponse()
            assert r.status == 200 and r.read() == b''
            c.request('GET', '/healthz'); r = c.getresponse(); r.read()
            assert c.sock is sock, 'connection was not reused'
            print('python ok')
            """
        guard let result = try TestEnvironment.require(runTool("python3", ["-c", script, String(server.port)]), "python3") else {
            return
        }
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("python ok"), "\(result.output)")
    }
}
