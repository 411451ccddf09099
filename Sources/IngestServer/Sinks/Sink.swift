import IngestCore

/// Where an app's accepted objects are written: a database that stores each
/// object once (by `_id`) and remembers which segments it has received.
///
/// The upload handler calls a sink in this order for each segment:
///
/// ```swift
/// try sink.migrate(to: schema)                  // at start-up and when development mode grows the schema
/// if let stored = try sink.receipt(for: key) {  // a replayed upload: answer as before
///     return stored
/// }
/// let result = try sink.write(objects, receipt: key) { duplicates in
///     responseJSON(duplicates)                  // stored with the receipt, in the same transaction
/// }
/// ```
///
/// Requirements on every implementation (contract lines 2 and 3):
/// - ``write(_:receipt:response:)`` stores all objects and the receipt in one
///   transaction: all of them or none;
/// - an object whose `_id` is already stored is left as it is and reported
///   as a duplicate, not as an error;
/// - a second `write` with the same ``SegmentKey`` writes nothing and returns
///   the stored response (two uploads of one segment may race);
/// - ``migrate(to:)`` is additive: it creates tables and adds columns, never
///   drops or changes them.
///
/// Implementations serialize their writes themselves; every method may be
/// called from any thread.
package protocol Sink: AnyObject, Sendable {
    /// A short description for logs and the status page, e.g. `sqlite:/data/app.sqlite`.
    var description: String { get }

    /// Creates the tables and columns the asymmetric classes of `schema`
    /// need (additive only).
    func migrate(to schema: Schema) throws(SinkError)

    /// The stored response of an already received segment, or nil.
    func receipt(for key: SegmentKey) throws(SinkError) -> [UInt8]?

    /// Writes `objects` and a receipt for `key` in one transaction.
    ///
    /// - Parameter response: called inside the transaction with one flag per
    ///   object (true: its `_id` was already stored); returns the response
    ///   body kept in the receipt.
    func write(
        _ objects: [SinkObject], receipt key: SegmentKey,
        response: ([Bool]) -> [UInt8]
    ) throws(SinkError) -> SinkWriteResult

    /// The rows the database holds per asymmetric collection of the
    /// migrated schema, sorted by name, whoever wrote them. A query of the
    /// database (cheap whatever the table sizes: an estimate where an exact
    /// count would scan a large table), so callers cache it: the server's
    /// ``SinkMonitor`` refreshes it every few seconds, never on a request.
    func collectionCounts() throws(SinkError) -> [CollectionRowCount]

    /// Whether ``collectionCounts()`` only reads counts the sink keeps in
    /// memory (SQLite: one process writes it), so that callers may read it
    /// on every request instead of caching it. Default false.
    var countsAreInMemory: Bool { get }

    /// Releases the database connection. Later calls throw ``SinkError/Code/closed``.
    func close()

    /// Whether the sink reads ``SinkObject/fields`` (the upload handler
    /// records them only then: it costs a little per object). Default false.
    var readsFields: Bool { get }
}

extension Sink {
    package var countsAreInMemory: Bool { false }
    package var readsFields: Bool { false }
}

/// The rows one collection holds in a sink, as ``Sink/collectionCounts()`` reports them.
///
/// ```swift
/// for row in try sink.collectionCounts() { print(row.collection, row.isEstimate ? "≈" : "", row.count) }
/// ```
package struct CollectionRowCount: Sendable, Hashable {
    /// The collection (class name).
    package var collection: String
    /// Its rows.
    package var count: Int
    /// Whether ``count`` is the database's estimate rather than an exact count.
    package var isEstimate: Bool

    /// Creates a count.
    package init(collection: String, count: Int, isEstimate: Bool = false) {
        self.collection = collection
        self.count = count
        self.isEstimate = isEstimate
    }
}

/// Where a sink without transactions of its own (ClickHouse) keeps its
/// segment receipts: a transactional database (the SQLite or PostgreSQL
/// sink's receipts table).
///
/// ```swift
/// if let stored = try receipts.receipt(for: key) { return stored }
/// // … store the objects elsewhere, then:
/// let result = try receipts.storeReceipt(for: key, objectCount: objects.count, response: body)
/// ```
package protocol ReceiptStore: AnyObject, Sendable {
    /// Where the receipts are, for logs.
    var description: String { get }
    /// The stored response of an already received segment, or nil.
    func receipt(for key: SegmentKey) throws(SinkError) -> [UInt8]?
    /// Stores the receipt of a segment whose `objectCount` objects were
    /// stored elsewhere. If a receipt for `key` exists already (a racing
    /// upload of the same segment), nothing is written and the stored
    /// response is returned as ``SinkWriteResult/alreadyReceived(response:)``.
    func storeReceipt(for key: SegmentKey, objectCount: Int, response: [UInt8]) throws(SinkError) -> SinkWriteResult
    /// Stores several receipts in one transaction (one commit, one sync for
    /// the lot), each as ``storeReceipt(for:objectCount:response:)`` would,
    /// in order: a later receipt for a key stored earlier in the same call
    /// is ``SinkWriteResult/alreadyReceived(response:)``. All or none.
    func storeReceipts(_ receipts: [PendingReceipt]) throws(SinkError) -> [SinkWriteResult]
    /// Releases the database connection.
    func close()
}

extension ReceiptStore {
    /// One transaction per receipt, for stores without a batch of their own.
    package func storeReceipts(_ receipts: [PendingReceipt]) throws(SinkError) -> [SinkWriteResult] {
        var results: [SinkWriteResult] = []
        for receipt in receipts {
            results.append(try storeReceipt(for: receipt.key, objectCount: receipt.objectCount, response: receipt.response))
        }
        return results
    }
}

/// A receipt to store with ``ReceiptStore/storeReceipts(_:)``.
package struct PendingReceipt: Sendable {
    /// The segment.
    package var key: SegmentKey
    /// Its objects stored elsewhere.
    package var objectCount: Int
    /// The response body kept in the receipt.
    package var response: [UInt8]

    /// Creates a receipt.
    package init(key: SegmentKey, objectCount: Int, response: [UInt8]) {
        self.key = key
        self.objectCount = objectCount
        self.response = response
    }
}

/// Identifies one uploaded segment: the client store and its segment number.
package struct SegmentKey: Hashable, Sendable, CustomStringConvertible {
    /// The client store that wrote the segment.
    package var storeId: SegmentStoreID
    /// The segment's number within that store.
    package var segmentNumber: UInt64

    /// Creates a key.
    package init(storeId: SegmentStoreID, segmentNumber: UInt64) {
        self.storeId = storeId
        self.segmentNumber = segmentNumber
    }

    package var description: String { "\(storeId.uuidString)/\(segmentNumber)" }
}

/// One validated object to store, kept as its encoded BSON document: the
/// upload handler validates records straight from their bytes and sinks that
/// can bind from bytes (SQLite) never build a ``BSONDocument``.
///
/// ```swift
/// let object = SinkObject(collection: "WeatherSensor", document: ["_id": .objectId(.generate())])
/// let id = try object.document["_id"]
/// ```
package struct SinkObject: Sendable {
    /// The collection (class name).
    package var collection: String
    /// The object as one encoded BSON document; its `_id` is the primary key.
    package var bson: [UInt8]
    /// Where the schema check found each property's element in `bson`
    /// (the upload handler sets it for records it proved valid), so that a
    /// sink can read the fields without walking the document again; nil
    /// when unknown.
    package var fields: SinkFields?

    /// Creates an object from a document (encoded once here).
    package init(collection: String, document: BSONDocument) {
        self.collection = collection
        self.bson = document.bsonBytes()
    }

    /// Creates an object from the bytes of one BSON document (as a segment
    /// record holds it). They are checked when a sink reads them: invalid
    /// bytes make the write fail, never read out of bounds.
    package init(collection: String, bson: [UInt8], fields: SinkFields? = nil) {
        self.collection = collection
        self.bson = bson
        self.fields = fields
    }

    /// The object decoded (for sinks that work on documents).
    /// - Throws: ``BSONError`` if the bytes are not one valid BSON document.
    package var document: BSONDocument {
        get throws(BSONError) { try BSONDocument(bson: bson) }
    }
}

/// Where one object's properties are in its BSON bytes, as
/// ``ObjectSchema/QuickCheck/isCertainlyValid(bson:spans:)`` recorded them
/// when it proved the object valid: the bytes are one valid document whose
/// every field is a distinct property of the class.
///
/// ```swift
/// if let fields = object.fields, let index = fields.properties.firstIndex(of: "deviceId") {  // once per class
///     let element = object.bson.withUnsafeBytes { BSONElement(fields.span(index), in: $0)?.stringBytes.map(Array.init) }
/// }
/// ```
package struct SinkFields: Sendable {
    /// The spans of all of an upload's proven objects (one allocation per
    /// upload, and one reference per object).
    package let storage: SinkFieldSpans
    /// Where this object's spans start in the storage.
    package let start: Int
    /// Which of the storage's property lists names this object's spans.
    package let list: Int

    /// Creates the fields of one object.
    package init(storage: SinkFieldSpans, start: Int, list: Int) {
        self.storage = storage
        self.start = start
        self.list = list
    }

    /// The class's property names, in the order of the spans.
    package var properties: [String] { storage.propertyLists[list] }

    /// The span of property `index` (``BSONElementSpan/absent`` if the object has none).
    package func span(_ index: Int) -> BSONElementSpan { storage.spans[start + index] }

    /// For each of `columns`, the index of the property of that name in
    /// ``properties`` (-1: none). Compute it once per class, not per object.
    package func propertyIndices(of columns: [String]) -> [Int] {
        let properties = self.properties
        return columns.map { properties.firstIndex(of: $0) ?? -1 }
    }

    /// Fills `slots` with one element per column, as ``BSONKeyTable/collect(_:into:)``
    /// would from a walk of the object's bytes `raw`: column `i`'s element
    /// is property `propertyOfColumn[i]`'s (nil: none). False if a span
    /// does not fit `raw` (then walk instead).
    package func collect(_ raw: UnsafeRawBufferPointer, propertyOfColumn: [Int], into slots: inout [BSONElement?]) -> Bool {
        if slots.count != propertyOfColumn.count { slots = Array(repeating: nil, count: propertyOfColumn.count) }
        for (column, property) in propertyOfColumn.enumerated() {
            guard property >= 0 else {
                slots[column] = nil
                continue
            }
            let span = self.span(property)
            guard span.start >= 0 else {
                slots[column] = nil
                continue
            }
            guard let element = BSONElement(span, in: raw) else { return false }
            slots[column] = element
        }
        return true
    }
}

/// The spans of an upload's proven objects, shared by their ``SinkFields``.
package final class SinkFieldSpans: Sendable {
    /// Every object's spans, back to back.
    package let spans: [BSONElementSpan]
    /// The property names the spans follow, one list per class.
    package let propertyLists: [[String]]

    /// Creates the storage.
    package init(spans: [BSONElementSpan], propertyLists: [[String]]) {
        self.spans = spans
        self.propertyLists = propertyLists
    }
}

/// The outcome of ``Sink/write(_:receipt:response:)``.
package enum SinkWriteResult: Sendable {
    /// The objects were written; `duplicates[i]` tells whether object `i`
    /// was already stored. `response` is the stored response body.
    case written(duplicates: [Bool], response: [UInt8])
    /// The segment had already been received (a concurrent upload won);
    /// nothing was written. `response` is the stored response body.
    case alreadyReceived(response: [UInt8])

    /// The response body either way.
    package var response: [UInt8] {
        switch self {
        case .written(_, let response), .alreadyReceived(let response): response
        }
    }
}

extension UnsafeBufferPointer {
    /// Calls `body` with each run of consecutive elements of one collection
    /// (`collection` of each element) and the run's positions: uploads
    /// mostly hold long runs of one class, whose per-class work (a schema
    /// check, a table's layout) is then done once per run. The elements
    /// are read in place.
    @inline(__always)
    func forEachRun(of collection: (Element) -> String, _ body: (String, Range<Int>) throws -> Void) rethrows {
        var runStart = 0
        while runStart < count {
            let name = collection(self[runStart])
            var runEnd = runStart + 1
            while runEnd < count && collection(self[runEnd]) == name { runEnd += 1 }
            try body(name, runStart..<runEnd)
            runStart = runEnd
        }
    }
}
