import Dispatch
import Foundation
import IngestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The exit grace period (``App/Configuration/exitUploadGracePeriod``): at a
/// normal exit of the process, the running sessions of every `App` still in
/// memory seal their active segment and upload what is pending, for at most
/// the grace period.
///
/// A command-line program such as the seed's writes its object and lets
/// `main` return; without this it would exit before the store sealed the
/// segment (about a second after the commit) and every run would leave its
/// data on disk. The handler is installed with `atexit(3)` when the first
/// `App` with a grace period above zero is created, so it runs when `main`
/// returns and when `exit()` is called, not on a signal's default action,
/// `_exit()` or `kill -9` (whatever is committed is on disk then anyway and
/// goes up on the next run).
///
/// The work runs on a thread of its own while the exiting thread waits for it
/// with a deadline, so nothing at exit can take longer than the grace period,
/// whatever the server or the disk do. Each session stops waiting when all it
/// had pending at the exit is acknowledged (or quarantined), when its server
/// cannot be reached (a request after the exit began got no answer), or when
/// it cannot upload at all (suspended, logged out, refresh token refused).
final class ExitUploads: @unchecked Sendable {  // state in a LockedBox
    static let shared = ExitUploads()

    private struct Registered {
        weak var app: App?
    }

    private let state = LockedBox<(installed: Bool, apps: [Registered])>((false, []))

    /// Makes `app`'s sessions part of the exit grace period (a no-op for a
    /// grace period of zero).
    func register(_ app: App) {
        guard app.configuration.exitUploadGracePeriod > 0 else { return }
        let install = state.withLock { state -> Bool in
            state.apps.removeAll { $0.app == nil }
            state.apps.append(Registered(app: app))
            defer { state.installed = true }
            return !state.installed
        }
        if install { atexit { ExitUploads.shared.runAtExit() } }
    }

    /// The `atexit` handler: waits at most the longest grace period of the
    /// registered apps for their sessions to drain.
    func runAtExit() {
        let apps = state.withLock { $0.apps.compactMap(\.app) }
        let work = apps.flatMap { app in
            app.sessionsForExit().map { (session: $0, grace: app.configuration.exitUploadGracePeriod) }
        }
        guard let longest = work.map(\.grace).max(), longest > 0 else { return }
        let done = DispatchSemaphore(value: 0)
        let start = DispatchTime.now()
        DispatchQueue.global().async {
            Self.drain(work, start: start)
            done.signal()
        }
        _ = done.wait(timeout: start + longest)
    }

    /// Seals and waits for each session's pending segments, each until its own deadline.
    private static func drain(_ work: [(session: SyncSession, grace: TimeInterval)], start: DispatchTime) {
        struct Draining {
            var session: SyncSession
            var deadline: DispatchTime
            var store: SegmentStore
            var target: UInt64
            var failures: Int
        }
        var draining: [Draining] = []
        for (session, grace) in work {
            let deadline = start + grace
            // Cut backoff waits short so the uploads start now.
            session.reconnect()
            let failures = session.transportFailures
            guard let store = try? session.openStore() else { continue }
            try? store.flush()
            guard DispatchTime.now() < deadline, let target = store.pendingSegments().last?.number else { continue }
            draining.append(Draining(session: session, deadline: deadline, store: store, target: target, failures: failures))
        }
        while !draining.isEmpty {
            let now = DispatchTime.now()
            draining.removeAll { item in
                now >= item.deadline
                    || !item.session.canUploadAtExit
                    || item.session.transportFailures > item.failures
                    || !item.session.isPending(upTo: item.target, in: item.store)
            }
            if !draining.isEmpty { usleep(5_000) }
        }
    }
}

extension App {
    /// The sessions the exit grace period drains: those of logged-in users
    /// that are running and not suspended.
    func sessionsForExit() -> [SyncSession] {
        allUsers.values.map(\.session).filter(\.canUploadAtExit)
    }
}

extension SyncSession {
    /// Running, not suspended, and not waiting for a login.
    var canUploadAtExit: Bool {
        box.withLock { $0.running && !$0.suspended && !$0.invalidSession }
    }

    /// Whether a segment numbered `target` or lower is still sealed or being uploaded.
    func isPending(upTo target: UInt64, in store: SegmentStore) -> Bool {
        store.pendingSegments().contains { $0.number <= target }
            || box.withLock { $0.uploading.contains { $0 <= target } }
    }
}
