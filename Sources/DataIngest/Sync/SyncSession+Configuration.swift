import Foundation

extension SyncSession {
    /// How a session uploads; every property has a documented default.
    ///
    /// ```swift
    /// var configuration = App.Configuration()
    /// configuration.sync.maxUploadsInFlight = 8
    /// configuration.sync.maximumBackoff = 30
    /// ```
    public struct Configuration: Sendable {
        /// Segments uploaded at once (oldest first). Default 4.
        public var maxUploadsInFlight: Int = 4
        /// Seconds between looks for newly sealed segments while fewer than
        /// ``maxUploadsInFlight`` uploads run (idle included). The
        /// store seals the active segment about a second after its first
        /// commit (``SegmentStore/Configuration/maxSegmentAgeMilliseconds``),
        /// so commit-to-upload stays near one second. Default 0.05.
        public var pollInterval: TimeInterval = 0.05
        /// First retry delay after a network error or a 5xx, in seconds; it
        /// doubles per failure, with jitter. Default 0.5.
        public var initialBackoff: TimeInterval = 0.5
        /// Longest retry delay, in seconds. Default 60.
        public var maximumBackoff: TimeInterval = 60
        /// While a request waits out a retry delay because nothing listened
        /// at the server's address (connection refused: a server stopped or
        /// restarting), the session tries a bare TCP connection to that
        /// address about this often (seconds, half to all of it, at random)
        /// and retries at once when one is accepted, so a restarted server
        /// is used again within about this long, not after the rest of a
        /// delay that grew while it was down (up to ``maximumBackoff``).
        /// Other failures (5xx, 429, timeouts, resets) wait their whole
        /// delay. 0 turns probing off. Default 1.
        public var reconnectProbeInterval: TimeInterval = 1
        /// Seconds an upload request may take. Default 120.
        public var uploadTimeout: TimeInterval = 120
        /// Seconds ``User/logOut()`` waits for pending data to upload before
        /// leaving the rest on disk. Default 10.
        public var logOutUploadTimeout: TimeInterval = 10

        /// The defaults above.
        /// Time and randomness: retry delays, their jitter, the deadline of
        /// ``SyncSession/wait(for:timeout:)``, token expiry. A seam for
        /// tests (package access); the real clock by default.
        package var clock: any SyncClock = SystemSyncClock()

        public init() {}
    }

    /// The session's state, as in the seed SDK.
    public enum State: String, Sendable {
        /// Uploading (or ready to upload as soon as segments are sealed).
        case active
        /// Suspended, or the user is logged out.
        case inactive
        /// The refresh token was refused: log the user in again.
        case waitingForAccessToken
    }

    /// The connection to the server.
    public enum ConnectionState: String, Sendable {
        /// No request is under way, or the last one failed.
        case disconnected
        /// A request is on its way and no answer came yet.
        case connecting
        /// The server answered the last request.
        case connected
    }

    /// The direction of progress notifications. Data Ingest only uploads.
    public enum ProgressDirection: Sendable {
        /// Uploads.
        case upload
        /// Downloads: asymmetric realms never download; notifications report complete.
        case download
    }

    /// Which work a progress notification follows.
    public enum ProgressMode: Sendable {
        /// All uploads from now on, forever.
        case reportIndefinitely
        /// What is pending when the notification is added; it ends once that is uploaded.
        case forCurrentlyOutstandingWork
    }

    /// Upload progress. Bytes are compressed segment bytes; objects are records.
    public struct Progress: Sendable, Hashable {
        /// Bytes uploaded and acknowledged (or quarantined).
        public var transferredBytes: Int
        /// Bytes uploaded plus bytes still pending.
        public var transferrableBytes: Int
        /// Objects acknowledged (or quarantined).
        public var transferredObjects: Int
        /// Objects acknowledged plus objects still pending.
        public var transferrableObjects: Int
        /// Whether nothing is left to upload.
        public var isTransferComplete: Bool { transferredObjects >= transferrableObjects }
        /// Between 0 and 1.
        public var progressEstimate: Double {
            transferrableObjects == 0 ? 1 : min(1, Double(transferredObjects) / Double(transferrableObjects))
        }
    }
}
