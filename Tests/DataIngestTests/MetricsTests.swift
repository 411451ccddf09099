#if canImport(Glibc)
import Glibc
#endif
import CoreMetrics
import Foundation
import Logging
import MetricsTestKit
import Testing
import IngestTestSupport
@testable import DataIngest

/// swift-metrics in the SDK: what a test metrics backend (MetricsTestKit's
/// `TestMetrics`) records while an app commits, logs and uploads to a real
/// `ingest-server` process, through an outage and a refused transaction;
/// and that nothing is made while no backend is there.
@Suite(.serialized) struct MetricsTests {
    /// The store of `user`'s session (opened if it is not yet).
    func store(of user: User) throws -> SegmentStore {
        try user.session.openStore()
    }

    func counter(_ metrics: TestMetrics, _ label: String, _ dimensions: [(String, String)]) throws -> Int64 {
        try metrics.expectCounter(label, dimensions).totalValue
    }

    @Test func aRealUploadIsReportedUnderTheDocumentedNames() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let metrics = TestMetrics()
        let app = makeTestApp(id: appId, server: server, directory: directory.path) { $0.metricsFactory = metrics }
        let user = try await app.login(credentials: .anonymous)
        let realm = try openSyncedRealm(user)
        let store = try store(of: user)
        let dimensions = [("store", store.storeId.description)]

        // 1,000 readings in 10 transactions, 300 events through swift-log.
        try writeReadings(realm, 0..<1_000, perTransaction: 100)
        let writer = try LogWriter(user: user)
        let logger = Logger(label: "metrics", factory: IngestLogHandler.factory(writer))
        for i in 0..<300 { logger.info("event \(i)") }
        #expect(writer.flush(timeout: 30))
        try await user.session.wait(for: .upload, timeout: 60)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 1_000)

        // Every store counter equals the store's own, which the server's rows confirm.
        var counters = store.counters
        #expect(counters.committedObjects == 1_300)
        #expect(try counter(metrics, IngestMetrics.committedObjects, dimensions) == 1_300)
        #expect(try counter(metrics, IngestMetrics.committedTransactions, dimensions) == Int64(counters.committedTransactions))
        #expect(try counter(metrics, IngestMetrics.committedBytes, dimensions) == Int64(counters.committedBytes))
        #expect(try counter(metrics, IngestMetrics.acknowledgedObjects, dimensions) == 1_300)
        #expect(try counter(metrics, IngestMetrics.acknowledgedSegments, dimensions) == Int64(counters.acknowledgedSegments))
        #expect(try counter(metrics, IngestMetrics.acknowledgedBytes, dimensions) == Int64(counters.acknowledgedBytes))
        #expect(try counter(metrics, IngestMetrics.quarantinedObjects, dimensions) == 0)
        // One upload per acknowledged segment, each timed; nothing retried.
        let uploads = try counter(metrics, IngestMetrics.uploads, dimensions)
        #expect(uploads == Int64(counters.acknowledgedSegments) && uploads >= 1)
        let timer = try metrics.expectTimer(IngestMetrics.uploadDuration, dimensions)
        #expect(timer.values.count == Int(uploads) && timer.values.allSatisfy { $0 > 0 })
        #expect(try counter(metrics, IngestMetrics.uploadRetries, dimensions + [("reason", "network")]) == 0)
        // Nothing pending once all is acknowledged.
        #expect(try metrics.expectGauge(IngestMetrics.pendingObjects, dimensions).lastValue == 0)
        #expect(try metrics.expectGauge(IngestMetrics.pendingSegments, dimensions).lastValue == 0)
        #expect(try metrics.expectGauge(IngestMetrics.pendingBytes, dimensions).lastValue == 0)
        // The log writer's events.
        #expect(try counter(metrics, IngestMetrics.logEventsCommitted, []) == 300)
        #expect(try counter(metrics, IngestMetrics.logEventsDropped, [("reason", "queue_full")]) == 0)

        // An outage: the server is killed, readings wait on disk (the
        // gauges say so) and every attempt is a network retry; back up, all
        // of it is uploaded.
        server.kill9()
        try writeReadings(realm, 1_000..<1_100, perTransaction: 50)
        let retries = try metrics.expectCounter(IngestMetrics.uploadRetries, dimensions + [("reason", "network")])
        #expect(await eventuallyAsync(timeout: 30) { retries.totalValue >= 2 })
        #expect(
            await eventuallyAsync(timeout: 10) {
                (try? metrics.expectGauge(IngestMetrics.pendingObjects, dimensions).lastValue) == 100
            })
        try server.restart()
        try await user.session.wait(for: .upload, timeout: 60)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 1_100)
        counters = store.counters
        #expect(try counter(metrics, IngestMetrics.acknowledgedObjects, dimensions) == 1_400)
        #expect(try counter(metrics, IngestMetrics.uploads, dimensions) == Int64(counters.acknowledgedSegments))
        #expect(try metrics.expectGauge(IngestMetrics.pendingObjects, dimensions).lastValue == 0)

        // A log call after shutdown is dropped, and counted.
        writer.shutdown()
        logger.info("too late")
        #expect(try counter(metrics, IngestMetrics.logEventsDropped, [("reason", "after_shutdown")]) == 1)
    }

    @Test func refusedObjectsAreCountedAsQuarantined() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path, config: SyncSessionTests.strictConfig)
        let metrics = TestMetrics()
        let app = makeTestApp(id: "strict", server: server, directory: directory.path) { $0.metricsFactory = metrics }
        let user = try await app.login(credentials: .anonymous)
        let realm = try openSyncedRealm(user, [SyncReading.self, SyncStrict.self])
        let dimensions = [("store", try store(of: user).storeId.description)]
        try realm.write {
            realm.create(SyncStrict.self, value: ["_id": ObjectId.generate(), "seq": 7])
            realm.create(SyncReading.self, value: ["_id": ObjectId.generate(), "seq": 1, "thread": 0, "payload": "same tx"])
        }
        try await user.session.wait(for: .upload, timeout: 30)
        #expect(try counter(metrics, IngestMetrics.quarantinedObjects, dimensions) == 2)
        #expect(try counter(metrics, IngestMetrics.quarantinedSegments, dimensions) == 1)
        #expect(try counter(metrics, IngestMetrics.acknowledgedObjects, dimensions) == 0)
        #expect(try metrics.expectGauge(IngestMetrics.pendingObjects, dimensions).lastValue == 0)
    }

    /// This test process never bootstraps a metrics backend: with none
    /// configured either, no metric is made and nothing is reported.
    @Test func nothingIsMadeWithoutABackend() throws {
        #expect(MetricsSystem.factory is NOOPMetricsHandler)
        #expect(IngestMetrics.factory(nil) == nil)
        #expect(IngestMetrics.factory(TestMetrics()) != nil)
        let directory = try TemporaryDirectory("sync")
        let store = try SegmentStore.open(SegmentStore.Configuration(directory: directory.path + "/store"))
        defer { try? store.close() }
        #expect(store.metrics == nil)
        _ = try TxDocument.commit(store, id: 1)
        let sink = CollectingSink()
        let writer = try LogWriter(realmConfiguration: sink.configuration(in: directory.path))
        defer { writer.shutdown() }
        #expect(writer.metrics == nil)
    }
}
