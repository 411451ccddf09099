import IngestCore

/// Collects the records of one write transaction, encoded straight into the
/// frame buffer that ``SegmentStore`` writes with one system call.
///
/// ```swift
/// try store.commit { tx in
///     try tx.append(collection: "WeatherSensor", document: bsonBytes)
///     try tx.append(collection: "WeatherSensor") { buffer in doc.appendBSON(to: &buffer) }
/// }
/// ```
public struct TransactionWriter {
    /// The encoded record frames.
    var buffer: [UInt8]
    /// Records appended so far.
    public private(set) var recordCount = 0
    /// Bytes of record frames so far.
    public var byteCount: Int { buffer.count }

    /// An empty transaction, for callers that collect records before committing
    /// (for example while a `realm.write {}` block runs), then call
    /// `store.commit(tx)`.
    ///
    /// ```swift
    /// var tx = TransactionWriter()
    /// try tx.append(collection: "WeatherSensor", document: bson)
    /// try store.commit(tx)
    /// ```
    public init(reservingCapacity capacity: Int = 512) {
        buffer = []
        buffer.reserveCapacity(capacity)
    }

    /// Appends one record: `document` is one encoded BSON document.
    /// - Throws: ``SegmentError`` (`invalidArgument`) for an empty or too long
    ///   collection name or bytes that are not one BSON document; nothing is appended.
    public mutating func append(collection: String, document: [UInt8]) throws {
        try SegmentFormat.appendRecord(collection: collection, document: document, to: &buffer)
        recordCount += 1
    }

    /// Appends one record from raw memory.
    public mutating func append(collection: String, document: UnsafeRawBufferPointer) throws {
        try SegmentFormat.appendRecord(collection: collection, document: document, to: &buffer)
        recordCount += 1
    }

    /// Appends one record whose BSON document `encode` writes directly into the
    /// transaction's buffer (no intermediate array), e.g. `{ doc.appendBSON(to: &$0) }`.
    public mutating func append(collection: String, encode: (inout [UInt8]) throws -> Void) throws {
        try SegmentFormat.appendRecord(collection: collection, to: &buffer, encode: encode)
        recordCount += 1
    }
}
