/// The store's counters: what was committed, sealed, is pending, and what
/// left the device (acknowledged, quarantined or dropped). Read with
/// ``SegmentStore/counters``. "Since open" counters start at zero when the
/// store opens; pending counts include segments recovered at open.
///
/// ```swift
/// let c = store.counters
/// print("pending \(c.pendingObjects) objects in \(c.pendingBytes) bytes, dropped \(c.droppedObjects)")
/// ```
public struct StoreCounters: Sendable, Hashable, Codable {
    /// Objects committed since open.
    public var committedObjects = 0
    /// Transactions committed since open.
    public var committedTransactions = 0
    /// Record frame bytes committed since open (uncompressed).
    public var committedBytes = 0
    /// Segments sealed since open (including re-sealed leftovers).
    public var sealedSegments = 0
    /// Objects in the segments sealed since open.
    public var sealedObjects = 0
    /// Compressed bytes of the segments sealed since open.
    public var sealedBytes = 0
    /// Segments awaiting acknowledgement (sealed, or active and not yet sealed).
    public var pendingSegments = 0
    /// Objects awaiting acknowledgement.
    public var pendingObjects = 0
    /// Bytes on disk awaiting acknowledgement (compressed sealed plus raw active).
    public var pendingBytes = 0
    /// Segments acknowledged (deleted) since open.
    public var acknowledgedSegments = 0
    /// Objects acknowledged since open.
    public var acknowledgedObjects = 0
    /// Compressed bytes acknowledged since open.
    public var acknowledgedBytes = 0
    /// Segments moved to quarantine since open (corrupt or with rejected records).
    public var quarantinedSegments = 0
    /// Objects moved to quarantine since open (rejected, or salvaged from corrupt segments).
    public var quarantinedObjects = 0
    /// Bytes moved to quarantine since open (rejected documents, corrupt or damaged files).
    public var quarantinedBytes = 0
    /// Sealed segments dropped by the ``SegmentStore/BudgetPolicy/dropOldest`` policy since open.
    public var droppedSegments = 0
    /// Objects dropped since open.
    public var droppedObjects = 0
    /// Bytes dropped since open.
    public var droppedBytes = 0
    /// Commits that failed since open (I/O errors, storage full).
    public var failedCommits = 0

    /// All zero.
    public init() {}
}

extension StoreCounters {
    /// Counts committed transactions (one exclusive access for all three counters).
    @inline(__always)
    mutating func recordCommits(transactions: Int, objects: Int, bytes: Int) {
        committedTransactions += transactions
        committedObjects += objects
        committedBytes += bytes
    }
}

/// A sealed segment awaiting upload, as listed by ``SegmentStore/pendingSegments()``.
public struct PendingSegment: Sendable, Hashable {
    /// The segment's number (upload order).
    public var number: UInt64
    /// The `.seg.gz` file: a standard gzip file, the upload body as is.
    public var path: String
    /// Compressed size.
    public var byteCount: Int
    /// Records in the segment.
    public var recordCount: Int
    /// Transactions in the segment.
    public var transactionCount: Int
}

/// What ``SegmentStore/commit(_:)`` returns.
public struct CommitReceipt: Sendable, Hashable {
    /// The transaction's number: `segmentNumber << 32 | index in segment`,
    /// increasing and never reused by the store.
    public var transactionNumber: UInt64
    /// The segment holding the transaction.
    public var segmentNumber: UInt64
    /// Records in the transaction.
    public var recordCount: Int
}

/// One entry of the quarantine (a JSON file `quarantine/*.report.json`).
public struct QuarantineReport: Sendable, Hashable, Codable {
    /// One rejected record.
    public struct Rejection: Sendable, Hashable, Codable {
        /// The record's index in the original segment.
        public var index: Int
        /// Its collection.
        public var collection: String
        /// The server's reason.
        public var reason: String
    }

    /// `"rejected"` (the server refused records), `"corrupt"` (a damaged sealed
    /// segment, salvaged record by record) or `"damagedActive"` (bytes after a
    /// damaged spot in an active segment, kept raw in `originalFile`).
    public var kind: String
    /// The segment's number.
    public var segmentNumber: UInt64
    /// Milliseconds since the Unix epoch when the report was written.
    public var createdAtMillis: Int64
    /// For corrupt segments: the reader's error.
    public var error: String?
    /// The quarantined original file, if kept.
    public var originalFile: String?
    /// A readable segment holding the rejected or salvaged records, if any.
    public var recordsFile: String?
    /// Records readable from a corrupt segment and saved to `recordsFile`.
    public var salvagedRecords: Int
    /// Of those, records whose transaction was incomplete.
    public var incompleteRecords: Int
    /// For rejected segments: each rejected record with its reason.
    public var rejections: [Rejection]
}
