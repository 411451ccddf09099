import Foundation
import Testing
@testable import DataIngest
import IngestSupport
import IngestTestSupport

/// The sync session's clock in tests: IngestTestSupport's `ManualClock`
/// (moved only by the test; its pauses are events the test waits for),
/// wall time that moves with it, and jitter from a seeded SplitMix64.
final class ManualSyncClock: SyncClock, @unchecked Sendable {  // state in ManualClock and a LockedBox
    let manual = ManualClock(start: 0)
    private let wallStart = Date().timeIntervalSince1970
    private let generator: LockedBox<SplitMix64>

    init(seed: UInt64 = 15) { generator = LockedBox(SplitMix64(seed: seed)) }

    func now() -> Double { manual.now }
    func wallTime() -> Double { wallStart + manual.now }
    func random(in range: ClosedRange<Double>) -> Double {
        generator.withLock { Double.random(in: range, using: &$0) }
    }
    func pause(_ seconds: Double, interrupted: @Sendable () -> Bool) async {
        await manual.pause(seconds, interrupted: interrupted)
    }
}

@Suite struct BackoffTests {
    @Test func delaysDoubleUpToTheMaximumKeepingARandomHalfAndRetryAfterAddsAtMostTenPercent() {
        var backoff = Backoff(initial: 0.5, maximum: 4, clock: ManualSyncClock())
        for ceiling in [0.5, 1, 2, 4, 4, 4] {
            let delay = backoff.next()
            #expect(delay >= ceiling / 2 && delay <= ceiling, "\(delay) for a ceiling of \(ceiling)")
        }
        let retryAfter = backoff.retryAfter(3)
        #expect(retryAfter >= 3 && retryAfter <= 3.3)
        backoff.reset()
        #expect(backoff.attempt == 0)
        #expect(backoff.next() <= 0.5)
    }

    @Test func theSameSeedGivesTheSameDelays() {
        var first = Backoff(initial: 0.5, maximum: 60, clock: ManualSyncClock(seed: 7))
        var second = Backoff(initial: 0.5, maximum: 60, clock: ManualSyncClock(seed: 7))
        #expect((0..<10).map { _ in first.next() } == (0..<10).map { _ in second.next() })
    }
}

/// Retries and expiry driven by the session's clock: each test waits for
/// the pause it expects and moves the clock, instead of sleeping.
@Suite(.serialized) struct SyncClockTests {
    @Test func aRefusedUploadIsRetriedWhenItsBackoffEndsOnTheSessionsClock() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let clock = ManualSyncClock()
        let transport = FaultyTransport([.refuseConnection])
        let app = makeTestApp(id: appId, server: server, directory: directory.path, transport: transport) {
            $0.sync.clock = clock
            $0.sync.initialBackoff = 0.5
        }
        let user = try await app.login(credentials: .anonymous)
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<10, perTransaction: 10)
        try user.session.openStore().flush()

        // The refused upload backs off on the session's clock: the first delay of 0.5 s, jittered.
        let delay = try await clock.manual.nextPause(within: 20)
        #expect(delay >= 0.25 && delay <= 0.5)
        #expect(transport.state.withLock { $0.injected } == 1)
        #expect(transport.state.withLock { $0.uploadTimes.count } == 1)  // no retry while the clock stands

        clock.manual.advance(by: delay)
        #expect(await eventuallyAsync(timeout: 20) { server.count(appId, "SyncReading") == 10 })
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 10)
        #expect(transport.state.withLock { $0.uploadTimes.count } == 2)
        _ = try await user.logOut()
    }

    @Test func waitingForUploadTimesOutOnTheSessionsClock() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let clock = ManualSyncClock()
        let app = makeTestApp(id: server.developmentAppId, server: server, directory: directory.path) { $0.sync.clock = clock }
        let user = try await app.login(credentials: .anonymous)
        user.session.suspend()
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<10, perTransaction: 10)
        let outcome = LockedBox<Result<Void, any Error>?>(nil)
        let waiting = Task {
            do {
                try await user.session.wait(for: .upload, timeout: 5)
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }
        // The deadline is 5 s of the session's clock after the wait began;
        // move the clock a second at a time until the wait ends.
        for _ in 0..<500 where outcome.withLock({ $0 == nil }) {
            clock.manual.advance(by: 1)
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        guard case .failure(let error as SyncError)? = outcome.withLock({ $0 }) else {
            Issue.record("the wait did not time out: \(String(describing: outcome.withLock { $0 }))")
            waiting.cancel()
            return
        }
        #expect(error.code == .timedOut)
        #expect(user.session.storeCounters?.pendingObjects == 10)
        // logOut() waits for the upload on the same clock: let it upload.
        user.session.resume()
        _ = try await user.logOut()
    }

    @Test func anAccessTokenPastItsExpiryOnTheSessionsClockIsRefreshedBeforeTheUpload() async throws {
        let directory = try TemporaryDirectory("sync")
        let server = try SyncTestServer(in: directory.path)
        let appId = server.developmentAppId
        let clock = ManualSyncClock()
        let transport = RecordingTransport()
        let app = makeTestApp(id: appId, server: server, directory: directory.path, transport: transport) {
            $0.sync.clock = clock
            $0.tokenRefreshMargin = 0
        }
        let user = try await app.login(credentials: .anonymous)
        #expect(transport.refreshes == 0)
        clock.manual.advance(by: 2 * 86_400)  // past any access token's lifetime
        let realm = try openSyncedRealm(user)
        try writeReadings(realm, 0..<10, perTransaction: 10)
        try await user.session.wait(for: .upload, timeout: 30)
        try server.expectExactlyOnce(appId, table: "SyncReading", count: 10)
        // Refreshed before the first upload went out (a token issued in the
        // same second as the first may read the same, so count the requests).
        #expect(transport.refreshes >= 1)
        let refreshedAt = try #require(transport.paths.firstIndex { $0.hasSuffix("/auth/session") })
        let uploadedAt = try #require(transport.paths.firstIndex { $0.hasSuffix("/ingest") })
        #expect(refreshedAt < uploadedAt)
        _ = try await user.logOut()
    }
}

/// Forwards to a real `URLSessionTransport`, recording each request's path.
final class RecordingTransport: SyncTransport, @unchecked Sendable {  // state in a LockedBox
    let inner = URLSessionTransport()
    private let box = LockedBox<[String]>([])

    var paths: [String] { box.withLock { $0 } }
    /// Access-token refreshes (`POST …/auth/session`).
    var refreshes: Int { paths.filter { $0.hasSuffix("/auth/session") }.count }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        box.withLock { $0.append(request.url.path) }
        return try await inner.send(request)
    }
}
