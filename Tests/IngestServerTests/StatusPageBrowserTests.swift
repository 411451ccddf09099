#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import IngestCore
import Testing
import IngestTestSupport
@testable import IngestServer
import IngestSupport

/// Headless Chromium (Debian's `chromium`, installed by Scripts/test.sh,
/// which sets INGEST_TEST_CHROMIUM), run as a child process and killed by
/// PID if it outlives its time bound.
enum HeadlessChromium {
    static var binary: String? { ProcessInfo.processInfo.environment["INGEST_TEST_CHROMIUM"] }
    static let skipReason: Comment = "INGEST_TEST_CHROMIUM is not set: run Scripts/test.sh, which installs chromium"

    /// The DOM of `url` serialized after its scripts ran for
    /// `budgetMilliseconds` of virtual time (`--dump-dom`).
    static func dumpDOM(_ url: String, budgetMilliseconds: Int, in directory: TemporaryDirectory) throws -> String {
        try run(["--dump-dom", url], budgetMilliseconds: budgetMilliseconds, in: directory)
    }

    /// A PNG of `url` at `width`×`height` CSS pixels.
    static func screenshot(
        _ url: String, to path: String, width: Int = 1280, height: Int = 2000,
        budgetMilliseconds: Int, in directory: TemporaryDirectory
    ) throws {
        _ = try run(
            ["--screenshot=\(path)", "--window-size=\(width),\(height)", "--hide-scrollbars", url],
            budgetMilliseconds: budgetMilliseconds, in: directory)
    }

    private static func run(_ arguments: [String], budgetMilliseconds: Int, in directory: TemporaryDirectory) throws -> String {
        guard let binary else { throw TestSupportError("\(skipReason)") }
        // --no-sandbox: the tests run as root in CI; the page is our own.
        let chromium = try ChildProcess.run(
            binary,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--user-data-dir=\(directory.path)/chromium-profile",
                "--virtual-time-budget=\(budgetMilliseconds)",
            ] + arguments,
            environment: ["DBUS_SESSION_BUS_ADDRESS": "/dev/null"], in: directory, name: "chromium", timeout: 90,
            mergingErrors: false)
        guard !chromium.timedOut else { throw TestSupportError("chromium did not finish within 90 s") }
        guard chromium.status == 0 else { throw TestSupportError("chromium exited with \(chromium.status)") }
        return chromium.output
    }
}

/// The status page at `GET /` as an operator's browser shows it, while data flows.
@Suite(
    "Status page in a real browser", .serialized,
    .enabled(if: TestEnvironment.runs(ifAvailable: HeadlessChromium.binary != nil), HeadlessChromium.skipReason))
struct StatusPageBrowserTests {
    @Test("headless Chromium renders rates, ingest lag, rejections, recent uploads, sink health and a plot with axes")
    func rendersWhileDataFlows() throws {
        let server = try IngestTestServer(config: uploadTestConfig)
        defer { server.stop() }
        let login = try server.call("POST", "/api/client/v2.0/app/shop/auth/providers/anon-user/login", body: Array("{}".utf8))
        let token = try #require(login.json?["access_token"] as? String)
        let userId = try #require(login.json?["user_id"] as? String)
        let deviceId = try #require(login.json?["device_id"] as? String)
        let store = SegmentStoreID.random()

        // Data flows the whole time: a segment of 10 sensors about every
        // 100 ms, created 3 s before it is sent; every 5th also carries an
        // object of the wrong type in a transaction of its own.
        let stop = LockedBox(false)
        let stored = LockedBox(0)
        let errors = LockedBox<[String]>([])
        let port = server.port
        let uploader = Thread {
            var number: UInt64 = 0
            let deadline = monotonicNow() + 120
            while !stop.withLock({ $0 }) && monotonicNow() < deadline {
                number += 1
                var transactions = [(0..<10).map { _ in ("WeatherSensor", sensor()) }]
                if number % 5 == 0 {
                    var wrong = sensor()
                    wrong["temperature"] = .string("warm")
                    transactions.append([("WeatherSensor", wrong)])
                }
                let created = Int64(Date().timeIntervalSince1970 * 1000) - 3000
                do {
                    let body = try makeSegment(
                        store: store, number: number, firstTransaction: number * 2,
                        createdAtMillis: created, transactions)
                    let answer = try IngestTestServer.call(
                        port: port, "POST", "/api/client/v2.0/app/shop/ingest",
                        headers: ["Authorization": "Bearer \(token)"], body: body)
                    if answer.status == 200 { stored.withLock { $0 += 1 } } else { errors.withLock { $0.append(answer.text) } }
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
                usleep(100_000)
            }
        }
        uploader.start()
        defer { stop.withLock { $0 = true } }
        // Until the sink's row counts (refreshed every 5 s) include some of them.
        let ready = monotonicNow() + 30
        while monotonicNow() < ready {
            let metrics = try server.call("GET", "/metrics").text
            if let line = metrics.split(separator: "\n").first(where: {
                $0.hasPrefix(#"ingest_collection_rows{app="shop",collection="WeatherSensor"}"#)
            }),
                let rows = line.split(separator: " ").last.flatMap({ Int($0) }), rows >= 100
            {
                break
            }
            usleep(200_000)
        }
        #expect(stored.withLock { $0 } >= 10)

        let directory = try TemporaryDirectory("e2e")
        let url = "http://127.0.0.1:\(server.port)/"
        // 6 s of virtual time: the page's script runs and refreshes the page in place once.
        let dom = try HeadlessChromium.dumpDOM(url, budgetMilliseconds: 6500, in: directory)
        if let path = ProcessInfo.processInfo.environment["INGEST_STATUS_SCREENSHOT"] {
            try HeadlessChromium.screenshot(url, to: path, budgetMilliseconds: 1000, in: directory)
        }
        stop.withLock { $0 = true }
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")

        // The script ran and refreshed the content in place.
        #expect(dom.contains(#"data-script="ran""#), "\(dom.prefix(2000))")
        #expect((Self.attribute("data-refreshes", in: dom).flatMap { Int($0) } ?? 0) >= 1)
        let app = try #require(Self.element(#"<section class="app" data-app="shop""#, in: dom), "\(dom.prefix(3000))")
        // The sink's health.
        #expect(app.contains(#"data-health="ok""#))
        // Per collection: rows in the sink, the rate, the lag (segments are created 3 s before they are sent), rejections.
        let row = try #require(Self.element(#"<tr data-collection="WeatherSensor""#, in: app))
        let rows = Self.attribute("data-rows", in: row).flatMap { Int($0) } ?? -1
        #expect(rows >= 100)
        #expect((Self.attribute("data-rate-1m", in: row).flatMap { Double($0) } ?? 0) > 0)
        let median = Self.attribute("data-lag-median-ms", in: row).flatMap { Double($0) } ?? -1
        let worst = Self.attribute("data-lag-worst-ms", in: row).flatMap { Double($0) } ?? -1
        #expect(median >= 2500 && median <= 15000, "median lag \(median) ms")
        #expect(worst >= median && worst <= 30000, "worst lag \(worst) ms")
        #expect((Self.attribute("data-rejected-10m", in: row).flatMap { Int($0) } ?? 0) >= 1)
        // The rejected objects with their reasons.
        let rejections = try #require(Self.element(#"<table class="rejections""#, in: app))
        #expect(rejections.contains("wrongType"))
        #expect(rejections.contains("temperature"))
        // The most recent uploads: store, user, device, objects, when (made relative by the script).
        let uploads = try #require(Self.element(#"<table class="uploads""#, in: app))
        #expect(uploads.contains(store.uuidString))
        #expect(uploads.contains(userId))
        #expect(uploads.contains(deviceId))
        #expect(uploads.contains(" ago</time>"))
        // The plot has a time axis and a value axis, with labels.
        let plot = try #require(Self.element(#"<svg class="rate-plot""#, in: app))
        #expect(plot.contains(#"class="x-axis""#) && plot.contains("10 min ago") && plot.contains(">now<"))
        #expect(plot.contains(#"class="y-axis""#) && plot.contains("objects/s"))
        #expect(plot.contains("<rect"))
    }

    /// The text from `start` to the end of its element (the matching close
    /// tag of the same name, counting nested ones), or nil.
    static func element(_ start: String, in text: String) -> String? {
        guard let open = text.range(of: start) else { return nil }
        let name = String(start.dropFirst().prefix { $0.isLetter || $0.isNumber })
        var depth = 0
        var cursor = open.lowerBound
        while cursor < text.endIndex {
            let next = text.range(of: "<\(name)", range: cursor..<text.endIndex)
            guard let close = text.range(of: "</\(name)>", range: cursor..<text.endIndex) else { return nil }
            if let next, next.lowerBound < close.lowerBound {
                depth += 1
                cursor = next.upperBound
            } else {
                depth -= 1
                cursor = close.upperBound
                if depth == 0 { return String(text[open.lowerBound..<close.upperBound]) }
            }
        }
        return nil
    }

    /// The value of the first `name="…"` attribute in `text`.
    static func attribute(_ name: String, in text: String) -> String? {
        guard let start = text.range(of: " \(name)=\"") else { return nil }
        guard let end = text[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return String(text[start.upperBound..<end])
    }
}
