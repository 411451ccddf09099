import Foundation
import IngestCore

/// Keeps a progress notification registered; ``invalidate()`` ends it.
public final class ProgressNotificationToken: Sendable {
    private let cancel: @Sendable () -> Void

    init(cancel: @escaping @Sendable () -> Void) { self.cancel = cancel }

    /// Stops the notifications.
    public func invalidate() { cancel() }
}

struct ProgressObserver {
    var block: @Sendable (SyncSession.Progress) -> Void
    /// For `.forCurrentlyOutstandingWork`: the counts at registration and the target.
    var baseObjects = 0
    var baseBytes = 0
    var targetObjects: Int?
    var targetBytes = 0
}

extension SyncSession {
    /// Calls `block` (on a background thread) now and after every segment the
    /// server answers for. With `.forCurrentlyOutstandingWork` it follows what
    /// is pending now and ends once that is uploaded.
    ///
    /// ```swift
    /// let token = session.addProgressNotification(for: .upload, mode: .reportIndefinitely) { progress in
    ///     print("\(Int(progress.progressEstimate * 100)) %")
    /// }
    /// ```
    /// - Returns: a token to keep (invalidate it to stop), or `nil` for `.download`.
    public func addProgressNotification(
        for direction: ProgressDirection, mode: ProgressMode,
        block: @escaping @Sendable (Progress) -> Void
    ) -> ProgressNotificationToken? {
        guard direction == .upload else { return nil }
        let now = currentProgress()
        var observer = ProgressObserver(block: block)
        if mode == .forCurrentlyOutstandingWork {
            observer.baseObjects = now.transferredObjects
            observer.baseBytes = now.transferredBytes
            observer.targetObjects = now.transferrableObjects
            observer.targetBytes = now.transferrableBytes
        }
        let id = box.withLock { state -> Int in
            state.nextObserverId += 1
            state.observers[state.nextObserverId] = observer
            return state.nextObserverId
        }
        notifyProgress(only: id)
        return ProgressNotificationToken { [weak self] in
            self?.box.withLock { _ = $0.observers.removeValue(forKey: id) }
        }
    }

    func currentProgress() -> Progress {
        guard let counters = box.withLock({ $0.store })?.counters else {
            return Progress(transferredBytes: 0, transferrableBytes: 0, transferredObjects: 0, transferrableObjects: 0)
        }
        let objects = counters.acknowledgedObjects + counters.quarantinedObjects
        return Progress(
            transferredBytes: counters.acknowledgedBytes, transferrableBytes: counters.acknowledgedBytes + counters.pendingBytes,
            transferredObjects: objects, transferrableObjects: objects + counters.pendingObjects)
    }

    func notifyProgress(only id: Int? = nil) {
        let now = currentProgress()
        let observers = box.withLock { $0.observers }
        for (key, observer) in observers where id == nil || key == id {
            guard let target = observer.targetObjects else {
                observer.block(now)
                continue
            }
            let progress = Progress(
                transferredBytes: min(now.transferredBytes, observer.targetBytes) - observer.baseBytes,
                transferrableBytes: observer.targetBytes - observer.baseBytes,
                transferredObjects: min(now.transferredObjects, target) - observer.baseObjects,
                transferrableObjects: target - observer.baseObjects)
            observer.block(progress)
            if progress.isTransferComplete { box.withLock { _ = $0.observers.removeValue(forKey: key) } }
        }
    }
}
