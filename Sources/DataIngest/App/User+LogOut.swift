import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif

/// What ``User/logOut()`` or ``User/remove()`` did with the user's data.
///
/// ```swift
/// let report = try await user.logOut()
/// if report.pendingObjects > 0 { print("\(report.pendingObjects) objects wait in \(report.storeDirectory) for the next login") }
/// ```
public struct LogOutReport: Sendable, Hashable {
    /// Objects acknowledged by the server while logging out.
    public var uploadedObjects: Int
    /// Objects still on disk (nothing is deleted): uploaded at the user's next login.
    public var pendingObjects: Int
    /// Segments still on disk.
    public var pendingSegments: Int
    /// Where they are.
    public var storeDirectory: String
    /// Why the upload did not finish, if it did not (timeout, server down).
    public var uploadError: String?
}

extension User {
    /// Logs the user out. First uploads what is pending, waiting at most
    /// ``SyncSession/Configuration/logOutUploadTimeout``; whatever is left
    /// stays on disk (never deleted) and is uploaded at the user's next
    /// login, and the report says how much. Anonymous users with data left
    /// keep their refresh token on disk so that the next
    /// `login(credentials: .anonymous)` resumes them; other users' refresh
    /// tokens are revoked.
    ///
    /// ```swift
    /// let report = try await user.logOut()
    /// ```
    @discardableResult
    public func logOut() async throws -> LogOutReport {
        try await leave(as: .loggedOut)
    }

    /// Logs the user out (as ``logOut()``, uploading first and keeping what
    /// is left on disk) and removes it from ``App/allUsers``.
    @discardableResult
    public func remove() async throws -> LogOutReport {
        let report = try await leave(as: .removed)
        app.forget(self)
        return report
    }

    /// Deletes the user's pending (not yet uploaded) data, the only call that
    /// does. Returns the number of objects discarded. A logged-in user's
    /// session starts again on an empty store.
    ///
    /// ```swift
    /// let discarded = try await user.discardPendingData()
    /// ```
    @discardableResult
    public func discardPendingData() async throws -> Int {
        let wasRunning = session.isRunning
        await session.stop()
        let pending = session.pendingObjectsOnDisk()
        do {
            if FileManager.default.fileExists(atPath: storeDirectory) {
                try FileManager.default.removeItem(atPath: storeDirectory)
            }
        } catch {
            throw AppError(.store, "cannot delete \(storeDirectory): \(error.localizedDescription)", underlyingError: error)
        }
        if wasRunning && state == .loggedIn { session.start() }
        return pending
    }

    private func leave(as target: UserRecord.State) async throws -> LogOutReport {
        let before = session.acknowledgedObjects
        var uploadError: String?
        if state == .loggedIn {
            do {
                try await session.wait(for: .upload, timeout: app.configuration.sync.logOutUploadTimeout)
            } catch {
                uploadError = "\(error)"
            }
        }
        let uploaded = session.acknowledgedObjects - before
        await session.stop()
        let pendingObjects = session.pendingObjectsOnDisk()
        let pendingSegments = session.pendingSegmentsOnDisk()
        let keepRefresh = pendingObjects > 0 && provider == "anon-user"
        let refresh = refreshToken
        if !keepRefresh, let refresh {
            // Revoke on the server; a failure leaves only a token that expires.
            _ = try? await app.request("DELETE", ProtocolRoutes.sessionPath, bearer: refresh)
        }
        try change { record in
            record.state = target
            record.accessToken = nil
            if !keepRefresh { record.refreshToken = nil }
        }
        if pendingObjects == 0 && target == .removed {
            app.records.delete(key)
        }
        return LogOutReport(
            uploadedObjects: uploaded, pendingObjects: pendingObjects, pendingSegments: pendingSegments,
            storeDirectory: storeDirectory, uploadError: uploadError)
    }
}
