#if canImport(Glibc)
import Glibc
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import IngestTestSupport

/// The ServerLogging binary: every request becomes LogEvent rows in the
/// ingest server's SQLite, and SIGTERM ends it cleanly with everything uploaded.
@Suite struct ServerLoggingTests {
    /// A GET or POST to the service; returns the status code.
    func request(_ url: String, method: String = "GET", body: Data? = nil) throws -> Int {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = 20
        let status = LockedStatus()
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { _, response, _ in
            status.set((response as? HTTPURLResponse)?.statusCode ?? -1)
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 30) == .success else { throw TestSupportError("no answer from \(url)") }
        return status.get()
    }

    @Test func everyRequestIsLoggedAndUploaded() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let service = Process()
        service.executableURL = URL(fileURLWithPath: try builtExecutable("ServerLogging"))
        service.arguments = [
            "--app-id", server.appId, "--base-url", server.baseURL, "--port", "0",
            "--data-dir", directory.path + "/service",
        ]
        service.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        let out = Pipe()
        service.standardOutput = out
        try service.run()
        defer { reap(service, within: 0) }
        let fd = out.fileHandleForReading.fileDescriptor
        let first = try readLine(fd, timeout: 30)
        guard let range = first.range(of: "listening on ") else {
            Issue.record("ServerLogging did not start: '\(first)'")
            return
        }
        let url = String(first[range.upperBound...])
        #expect(try request(url + "/hello?name=ann") == 200)
        #expect(try request(url + "/orders/12") == 200)
        #expect(try request(url + "/orders/xx") == 400)
        #expect(try request(url + "/echo", method: "POST", body: Data("hi".utf8)) == 200)
        #expect(try request(url + "/fail") == 500)
        kill(service.processIdentifier, SIGTERM)
        let last = try readLine(fd, timeout: 60)
        #expect(reap(service, within: 60), "ServerLogging did not stop within 60 s of SIGTERM")
        #expect(service.terminationStatus == 0)
        #expect(last.hasPrefix("stopped: 5 requests handled"), "\(last)")
        #expect(try server.query("SELECT count(*) FROM LogEvent WHERE label = 'server-logging.access'") == ["5"])
        #expect(
            try server.query(
                "SELECT group_concat(message, ',') FROM (SELECT message FROM LogEvent WHERE label = 'server-logging.access' ORDER BY _id)")
                == ["GET /hello 200,GET /orders/12 200,GET /orders/xx 400,POST /echo 200,GET /fail 500"])
        #expect(try server.query("SELECT level FROM LogEvent WHERE message = 'GET /fail 500'") == ["error"])
        #expect(
            try server.query("SELECT json_extract(metadata, '$.route') FROM LogEvent WHERE message = 'GET /orders/12 200'") == [
                "/orders/{id}"
            ])
        // Handler events carry their request's id (/hello logs at debug, below the default level).
        #expect(
            try server.query(
                "SELECT group_concat(json_extract(metadata, '$.request_id'), ',') FROM (SELECT metadata FROM LogEvent WHERE label = 'server-logging.app' AND json_extract(metadata, '$.request_id') IS NOT NULL ORDER BY _id)"
            )
                == ["req-2,req-3,req-4,req-5"])
        #expect(
            try server.query("SELECT message FROM LogEvent WHERE label = 'server-logging.app' ORDER BY _id DESC LIMIT 1") == [
                "service stopping"
            ])
    }
}

/// The status code written by a URLSession callback.
final class LockedStatus: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var value = -1
    func set(_ status: Int) { lock.lock(); value = status; lock.unlock() }
    func get() -> Int { lock.lock(); defer { lock.unlock() }; return value }
}
