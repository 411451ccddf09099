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
    /// Bytes of record (and cursor) frames so far.
    public var byteCount: Int { buffer.count }
    /// The cursors this transaction sets, in order (see ``setCursor(_:named:)``).
    var cursors: [(name: String, value: [UInt8])] = []
    /// Whether committing writes anything: a record or a cursor.
    var hasContent: Bool { recordCount > 0 || !cursors.isEmpty }

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

    /// A transaction that appends to `buffer` (empty, with capacity to reuse).
    init(buffer: [UInt8]) {
        self.buffer = buffer
    }

    /// Appends one record: `document` is one encoded BSON document.
    /// - Throws: ``SegmentError`` (`invalidArgument`) for an empty or too long
    ///   collection name or bytes that are not one BSON document; nothing is appended.
    public mutating func append(collection: String, document: [UInt8]) throws {
        try SegmentFormat.appendRecord(collection: collection, document: document, to: &buffer)
        recordCount += 1
    }

    /// Sets the cursor `name` to `value` in this transaction: committed with
    /// its records or not at all, and from then on
    /// ``SegmentStore/cursor(named:)`` (also after a crash and reopen)
    /// returns it until a later transaction sets it again. An empty `value`
    /// removes the cursor. A transaction may set cursors without records.
    /// - Throws: ``SegmentError`` (`invalidArgument`) for a name of 0 or more
    ///   than 255 UTF-8 bytes or a value over 64 KiB; nothing is appended.
    public mutating func setCursor(_ value: [UInt8], named name: String) throws {
        try SegmentFormat.appendCursor(name: name, value: value, to: &buffer)
        cursors.append((name, value))
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
