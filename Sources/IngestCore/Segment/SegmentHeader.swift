/// The header of a segment: the first frame of every segment stream.
///
/// ```swift
/// let header = SegmentHeader(storeId: .random(), segmentNumber: 1,
///                            createdAtMillis: 1_700_000_000_000, schema: schemaBSON)
/// ```
package struct SegmentHeader: Sendable, Hashable {
    /// The format version (``SegmentFormat/version`` when written by this code).
    package var formatVersion: UInt16
    /// The store that wrote the segment.
    package var storeId: SegmentStoreID
    /// The segment's number, increasing within a store (the upload order).
    package var segmentNumber: UInt64
    /// When the segment was started, in milliseconds since the Unix epoch (UTC).
    package var createdAtMillis: Int64
    /// The schema of the types the segment holds, as one encoded BSON document
    /// (opaque to the format; the schema model defines its contents).
    package var schema: [UInt8]

    /// Creates a header of the current format version.
    package init(
        storeId: SegmentStoreID, segmentNumber: UInt64, createdAtMillis: Int64,
        schema: [UInt8] = SegmentFormat.emptyDocument
    ) {
        self.formatVersion = SegmentFormat.version
        self.storeId = storeId
        self.segmentNumber = segmentNumber
        self.createdAtMillis = createdAtMillis
        self.schema = schema
    }
}

/// One record: a BSON document in a named collection (the object's type).
package struct SegmentRecord: Sendable, Hashable {
    /// The record's 0-based position in its segment (used to reject it).
    package var index: Int
    /// The collection (type) name, e.g. `"WeatherSensor"`.
    package var collection: String
    /// The encoded BSON document (its first 4 bytes are its little-endian length).
    package var document: [UInt8]

    /// A record (a front door other than segments, e.g. Realm sync, builds its own).
    package init(index: Int, collection: String, document: [UInt8]) {
        self.index = index
        self.collection = collection
        self.document = document
    }
}

/// The end of a write transaction: the records since the previous commit
/// frame (or the header) form one transaction.
package struct SegmentCommit: Sendable, Hashable {
    /// The store-wide transaction number (increasing, never reused by a store).
    package var transactionNumber: UInt64
    /// How many records the transaction holds.
    package var recordCount: Int
}

/// The summary closing a sealed segment.
package struct SegmentEnd: Sendable, Hashable {
    /// Records in the segment.
    package var recordCount: Int
    /// Transactions in the segment.
    package var transactionCount: Int
}

/// What ``SegmentReader/next()`` returns, in stream order.
package enum SegmentEvent: Sendable, Hashable {
    /// A record of the current (not yet committed) transaction.
    case record(SegmentRecord)
    /// The transaction holding the preceding records is complete.
    case commit(SegmentCommit)
    /// The sealed segment's last frame.
    case end(SegmentEnd)
}
