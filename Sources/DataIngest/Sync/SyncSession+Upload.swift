import Foundation
import IngestCore

extension SyncSession {
    /// The upload loop: keeps up to `maxUploadsInFlight` of the oldest
    /// sealed segments in flight until the session stops.
    func run() async {
        await withTaskGroup(of: UInt64.self) { group in
            var inFlight = Set<UInt64>()
            // A child that only sleeps `pollInterval` and returns `Self.pollTick`:
            // while fewer uploads than allowed run, a segment sealed meanwhile
            // is sent within that time, not only once a running upload ends.
            var tickRunning = false
            while isRunning {
                let suspended = box.withLock { $0.suspended }
                guard !suspended, let store = try? openStore() else {
                    if suspended {
                        await pause(configuration.pollInterval)
                    } else {
                        await backOff(configuration.initialBackoff)  // the store cannot be opened
                    }
                    continue
                }
                for segment in store.pendingSegments() where !inFlight.contains(segment.number) {
                    guard inFlight.count < max(1, configuration.maxUploadsInFlight) else { break }
                    inFlight.insert(segment.number)
                    group.addTask { [self] in
                        await upload(segment, store: store)
                        return segment.number
                    }
                }
                if inFlight.isEmpty {
                    await pause(configuration.pollInterval)
                    continue
                }
                if inFlight.count < max(1, configuration.maxUploadsInFlight) && !tickRunning {
                    tickRunning = true
                    group.addTask { [self] in
                        await pause(configuration.pollInterval)
                        return Self.pollTick
                    }
                }
                if let done = await group.next() {
                    if done == Self.pollTick {
                        tickRunning = false
                    } else {
                        inFlight.remove(done)
                    }
                }
            }
            // Stopping: in-flight uploads see `running == false` and return;
            // an interrupted one is simply sent again next time (idempotent).
            for await _ in group {}
        }
        box.withLock { $0.connection = .disconnected }
    }

    /// What the upload loop's poll child returns: no segment has this number
    /// (numbers count up from 1 within blocks of 1,024 per process start).
    static let pollTick = UInt64.max

    /// Uploads one segment until the server has answered for it for good
    /// (acknowledged, or rejected into quarantine) or the session stops.
    func upload(_ segment: PendingSegment, store: SegmentStore) async {
        box.withLock { _ = $0.uploading.insert(segment.number) }
        defer { box.withLock { _ = $0.uploading.remove(segment.number) } }
        var backoff = Backoff(initial: configuration.initialBackoff, maximum: configuration.maximumBackoff, clock: configuration.clock)
        var authRetries = 0
        while isRunning {
            if box.withLock({ $0.suspended }) {
                await pause(configuration.pollInterval)
                continue
            }
            guard let user else { return }
            let token: String
            do {
                token = try await user.validAccessToken()
                box.withLock { $0.invalidSession = false }
            } catch {
                store.metrics?.uploadRetried(.auth)
                await authFailed(error, backoff: &backoff)
                continue
            }
            let body: Data
            do {
                body = try store.uploadBody(for: segment)  // decrypted in memory when encrypted
            } catch {
                // Gone: acknowledged by another session of this store meanwhile.
                if !store.pendingSegments().contains(where: { $0.number == segment.number }) { return }
                if let damage = error as? SegmentError, damage.code != .io {
                    // An encrypted file that no longer verifies: never sent, kept in quarantine.
                    store.quarantineUnreadable(segment: segment.number, error: damage)
                    report(
                        SyncError(
                            .store, "segment \(segment.number) is damaged and was quarantined: \(damage)", segmentNumber: segment.number))
                    return
                }
                report(
                    SyncError(
                        .store, "cannot read segment \(segment.number) at \(segment.path): \(error.localizedDescription)",
                        segmentNumber: segment.number))
                await backOff(backoff.next())
                continue
            }
            let request = TransportRequest(
                method: "POST", url: app.url(ProtocolRoutes.uploadPath(appId: app.id)),
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/gzip"],
                body: body, timeout: configuration.uploadTimeout)
            box.withLock { if $0.connection == .disconnected { $0.connection = .connecting } }
            let response: TransportResponse
            let sentAt = StoreMonitor.now()
            do {
                response = try await app.transport.send(request)
            } catch {
                store.metrics?.uploadRetried(.network)
                box.withLock {
                    $0.connection = .disconnected
                    $0.transportFailures += 1
                }
                await backOff(backoff.next(), after: error)
                continue
            }
            store.metrics?.uploadAnswered(status: response.status, nanoseconds: StoreMonitor.now() &- sentAt)
            box.withLock {
                $0.connection = .connected
                $0.heardFromServer &+= 1
            }
            switch response.status {
            case 200:
                if handleAccepted(segment, response: response, store: store) { return }
                await backOff(backoff.next())
            case 401:
                // Expired or refused access token: refresh once or twice, then back off.
                authRetries += 1
                if authRetries > 2 { await backOff(backoff.next()) }
                do {
                    try await user.refreshAccessToken(replacing: token)
                } catch {
                    await authFailed(error, backoff: &backoff)
                }
            case 400 where response.serverError?.code == "unsupported_segment_version":
                // A server older than this client's segment format: the segment
                // is fine and stays on disk until the server is upgraded.
                report(
                    SyncError(
                        .serverTooOld,
                        "the server does not read segment format version \(SegmentFormat.version) (segment \(segment.number)); upgrade the server, the data waits on disk",
                        segmentNumber: segment.number, httpStatus: 400, serverCode: "unsupported_segment_version"))
                await backOff(backoff.next())
            case 408, 429, 503:
                await backOff(response.retryAfterSeconds.map { backoff.retryAfter($0) } ?? backoff.next())
            case 500...599:
                await backOff(response.retryAfterSeconds.map { backoff.retryAfter($0) } ?? backoff.next())
            default:
                if quarantineWhole(segment, response: response, store: store) { return }
                await backOff(backoff.next())
            }
        }
    }

    private func authFailed(_ error: any Error, backoff: inout Backoff) async {
        if let error = error as? AppError, error.code == .invalidSession || error.code == .userLoggedOut {
            let first = box.withLock { state -> Bool in
                defer { state.invalidSession = true }
                return !state.invalidSession
            }
            if first && error.code == .invalidSession {
                report(
                    SyncError(
                        .invalidSession,
                        "the server refused to authenticate user \(user?.id ?? "?"): \(error.message); log the user in again, the data waits on disk",
                        httpStatus: error.httpStatus, serverCode: error.serverCode))
            }
            await backOff(configuration.maximumBackoff)
        } else {
            box.withLock {
                $0.connection = .disconnected
                $0.transportFailures += 1
            }
            await backOff(backoff.next(), after: error)
        }
    }

    /// A 200: acknowledge, quarantining refused objects first. Returns false
    /// if the store could not record it (retried: the server answers the same).
    private func handleAccepted(_ segment: PendingSegment, response: TransportResponse, store: SegmentStore) -> Bool {
        let result: UploadAnswer
        do {
            result = try UploadAnswer(jsonBody: response.body)
        } catch {
            report(
                SyncError(
                    .store, "the server's answer for segment \(segment.number) is not a valid result: \(error)",
                    segmentNumber: segment.number, httpStatus: 200))
            return false
        }
        do {
            if result.rejectedObjects.isEmpty {
                try store.acknowledge(segment: segment.number)
            } else {
                var reasons: [Int: String] = [:]
                for object in result.rejectedObjects {
                    reasons[object.index] = Quarantine.encodeReason(code: object.errorCode, reason: object.reason)
                }
                try store.reject(segment: segment.number, records: reasons)
            }
        } catch let error as SegmentStoreError where error.code == .unknownSegment {
            return true  // another session of this store recorded it
        } catch {
            report(
                SyncError(
                    .store, "cannot record the server's answer for segment \(segment.number): \(error)", segmentNumber: segment.number))
            return false
        }
        box.withLock { $0.acknowledgedObjects += segment.recordCount - result.rejectedObjects.count }
        if !result.rejectedObjects.isEmpty {
            let rejections = result.rejectedObjects.map {
                SyncError.Rejection(index: $0.index, collection: $0.collection, id: $0.id, errorCode: $0.errorCode, reason: $0.reason)
            }
            let codes = Set(rejections.map(\.errorCode)).sorted().joined(separator: ", ")
            report(
                SyncError(
                    .objectsRejected,
                    "the server refused \(rejections.count) of \(segment.recordCount) objects of segment \(segment.number) (\(codes)); they are in quarantine (session.quarantine) with the server's reasons",
                    segmentNumber: segment.number, httpStatus: 200, rejections: rejections))
        }
        notifyProgress()
        return true
    }

    /// A permanent error status: the whole segment goes to quarantine.
    private func quarantineWhole(_ segment: PendingSegment, response: TransportResponse, store: SegmentStore) -> Bool {
        let server = response.serverError
        let code = server?.code.isEmpty == false ? server!.code : "http\(response.status)"
        let reason = "HTTP \(response.status): \(server?.message ?? String(decoding: response.body.prefix(500), as: UTF8.self))"
        var reasons: [Int: String] = [:]
        for index in 0..<segment.recordCount { reasons[index] = Quarantine.encodeReason(code: code, reason: reason) }
        do {
            try store.reject(segment: segment.number, records: reasons)
        } catch let error as SegmentStoreError where error.code == .unknownSegment {
            return true
        } catch {
            report(SyncError(.store, "cannot quarantine segment \(segment.number): \(error)", segmentNumber: segment.number))
            return false
        }
        report(
            SyncError(
                .segmentRejected,
                "the server refused segment \(segment.number) for good (\(reason)); its \(segment.recordCount) objects are in quarantine (session.quarantine)",
                segmentNumber: segment.number, httpStatus: response.status, serverCode: code))
        notifyProgress()
        return true
    }
}
