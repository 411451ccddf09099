import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestSupport
import IngestHTTP
import IngestTestSupport

/// The upload handler in process, under concurrent uploads of the same and
/// of different segments: every object stored once, every answer consistent.
@Suite("Upload: concurrency")
struct UploadConcurrencyTests {
    @Test("racing uploads of the same segments store each object once and give identical answers")
    func racingReplays() throws {
        let directory = try TemporaryDirectory("e2e")
        let config = try ServerConfiguration(json: Array(uploadTestConfig.replacingOccurrences(of: "$DATA", with: directory.path).utf8))
        let service = try IngestService(configuration: config)
        defer { service.close() }
        let token = try service.auth.login(appId: "shop", provider: "anon-user", body: []).accessToken
        let store = SegmentStoreID.random()
        let shared = try (1...4).map { number in
            try makeSegment(
                store: store, number: UInt64(number), firstTransaction: UInt64(number * 10),
                [(0..<25).map { _ in ("WeatherSensor", sensor()) }])
        }
        @Sendable func request(_ body: [UInt8]) -> HTTPRequest {
            var request = HTTPRequest(
                method: "POST", target: "/api/client/v2.0/app/shop/ingest",
                headers: ["Authorization": "Bearer \(token)"], body: body)
            request.pathParameters = ["appId": "shop"]
            return request
        }
        // 8 threads each upload all 4 segments, in different orders.
        let answers = LockedBox<[Int: [[UInt8]]]>([:])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for step in 0..<4 {
                let number = (step + worker) % 4
                let response = service.uploads.handle(request(shared[number]))
                answers.withLock { $0[number, default: []].append(response.status.code == 200 ? response.body : []) }
            }
        }
        let all = answers.withLock { $0 }
        for number in 0..<4 {
            let bodies = try #require(all[number])
            #expect(bodies.count == 8)
            #expect(Set(bodies).count == 1, "segment \(number + 1) got different answers")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(bodies[0])) as? [String: Any])
            #expect((json["accepted"] as? NSNumber)?.intValue == 25)
        }
        let sink = directory.path + "/shop.sqlite"
        #expect(try sqliteRows(sink, "SELECT count(*) FROM WeatherSensor") == [["100"]])
        #expect(try sqliteRows(sink, "SELECT count(*) FROM _dataingest_receipts") == [["4"]])
        #expect(service.metrics.replays.value(["shop"]) == 28)
        #expect(service.metrics.objects.value(["shop", "accepted"]) == 100)
    }
}
