#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import IngestHTTP
import IngestTestSupport

/// Seeded, bounded fuzzing of request lines, headers and chunked encoding
/// against a real server process: it must answer every input with a
/// well-formed response or a close, and keep serving afterwards.
@Suite struct HTTPFuzzTests {
    static let templates: [String] = [
        "GET /healthz?x=1 HTTP/1.1\r\nHost: fuzz\r\nAccept: */*\r\n\r\n",
        "POST /_test/echo HTTP/1.1\r\nHost: fuzz\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nhello world",
        "POST /_test/echo HTTP/1.1\r\nHost: fuzz\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n6;q=\"x\\\"y\"\r\n world\r\n0\r\nT: v\r\n\r\n",
        "PUT /_test/echo HTTP/1.0\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc",
        "POST /_test/echo HTTP/1.1\r\nHost: fuzz\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody",
    ]
    static let interesting: [UInt8] = [13, 10, 32, 9, 0, 58, 59, 48, 102, 127, 255, 34, 44, 47, 63, 37, 0x80]
    static let allowedStatuses: Set<Int> = [100, 200, 204, 400, 404, 405, 408, 413, 414, 417, 431, 501, 505]

    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<8, using: &random) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert(interesting.randomElement(using: &random)!, at: at)
            case 2: bytes.remove(at: at)
            case 3: bytes = Array(bytes[..<at])
            case 4:
                // A random chunk size or length.
                let number = Array(
                    String(
                        UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random),
                        radix: Bool.random(using: &random) ? 16 : 10
                    ).utf8)
                bytes.insert(contentsOf: number, at: at)
            case 5:
                // CRLF becomes a bare LF or a bare CR.
                if let cr = bytes[at...].firstIndex(of: 13) {
                    if Bool.random(using: &random) { bytes.remove(at: cr) } else { bytes[cr + 1] = 32 }
                }
            case 6:
                // Duplicate a header line (conflicting framing, repeated Host).
                let line = Array("Content-Length: 5\r\n".utf8)
                let other = Array("Transfer-Encoding: chunked\r\n".utf8)
                if let lf = bytes.firstIndex(of: 10) {
                    bytes.insert(contentsOf: Bool.random(using: &random) ? line : other, at: lf + 1)
                }
            default:
                bytes.insert(contentsOf: Array(repeating: UInt8(ascii: "A"), count: Int.random(in: 1...20_000, using: &random)), at: at)
            }
        }
        return bytes
    }

    /// Reads every response until the server closes; checks each is well-formed.
    static func checkResponses(_ connection: LoopbackConnection, seed: UInt64) {
        for _ in 0..<64 {
            do {
                let response = try connection.readResponse(timeout: 3)
                #expect(allowedStatuses.contains(response.status), "seed \(seed): status \(response.status)")
            } catch {
                let text = "\(error)"
                let cleanEnd = text.contains("connection closed before a response head") && connection.bufferedByteCount == 0
                #expect(cleanEnd, "seed \(seed): \(text)")
                return
            }
        }
    }

    @Test func fuzzedRequestsNeverBreakTheServer() throws {
        let server = try HTTPTestServer([
            "--max-header-bytes", "8192", "--max-body-bytes", "100000",
            "--header-timeout", "1", "--body-timeout", "1", "--keep-alive-timeout", "1",
        ])
        let deadline = monotonicNow() + 60
        for seed in UInt64(1)...UInt64(250) where monotonicNow() < deadline {
            var random = SplitMix64(seed: seed)
            let connection = try server.connect()
            // One to three requests per connection, some pipelined valid ones mixed in.
            var payload: [UInt8] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let template = Array(Self.templates.randomElement(using: &random)!.utf8)
                payload += Bool.random(using: &random) ? Self.mutate(template, &random) : template
            }
            try? connection.send(payload)
            connection.shutdownWrite()
            Self.checkResponses(connection, seed: seed)
        }
        let health = try server.request("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(health.status == 200)
        #expect(server.isRunning)
    }
}

/// In-process differential fuzzing of the parser: for seeded mutations of
/// valid requests, delivering the bytes at once or in random pieces must give
/// the same events (and never trap).
@Suite struct HTTPParserFuzzTests {
    static func events(_ bytes: [UInt8], pieces: [Int]) -> [String] {
        var parser = HTTPRequestParserForTests()
        var out: [String] = []
        var offset = 0
        for size in pieces + [bytes.count] where offset < bytes.count {
            let end = min(bytes.count, offset + max(1, size))
            out += parser.feed(Array(bytes[offset..<end]))
            offset = end
            if out.last?.hasPrefix("error") == true { break }
        }
        return out.filter { $0 != "continue" }
    }

    @Test func splitDeliveryNeverChangesTheOutcome() {
        let start = monotonicNow()
        for seed in UInt64(1)...UInt64(1000) where monotonicNow() - start < 20 {
            var random = SplitMix64(seed: seed &* 7919)
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let template = Array(HTTPFuzzTests.templates.randomElement(using: &random)!.utf8)
                bytes += Bool.random(using: &random) ? HTTPFuzzTests.mutate(template, &random) : template
            }
            let pieces = (0..<8).map { _ in Int.random(in: 1...40, using: &random) }
            let whole = Self.events(bytes, pieces: [])
            let split = Self.events(bytes, pieces: pieces)
            #expect(whole == split, "seed \(seed &* 7919)")
        }
    }
}

/// A thin wrapper that turns parser events into strings for comparison.
struct HTTPRequestParserForTests {
    private var parser = HTTPRequestParser(limits: .init(maxHeaderBytes: 8192, maxHeaderCount: 50, maxBodyBytes: 100_000))

    mutating func feed(_ bytes: [UInt8]) -> [String] {
        parser.append(bytes)
        var out: [String] = []
        while true {
            switch parser.next() {
            case .needMoreData: return out
            case .expectContinue: out.append("continue")
            case .request(let r, let keepAlive):
                out.append("request \(r.method) \(r.target) \(r.headers.count) \(r.body.count) \(r.body.hashValue) \(keepAlive)")
            case .error(let e):
                out.append("error \(e.status.code)")
                return out
            }
        }
    }
}
