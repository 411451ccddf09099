import IngestCore

/// Receives the encoded objects of each committed write transaction of a
/// synced realm. The segment store implements it: it appends the whole
/// transaction durably (all records or none) before `commit` returns.
///
/// ```swift
/// final class PrintingSink: TransactionSink {
///     func commit(_ transaction: EncodedTransaction) throws {
///         for record in transaction.records { print(record.collection, record.range.count, "bytes") }
///     }
/// }
/// ```
public protocol TransactionSink: AnyObject, Sendable {
    /// Makes `transaction` durable. Throwing aborts the commit: the realm
    /// rolls the transaction back and `write {}` throws
    /// ``RealmError/Code/commitFailed`` with this error underneath.
    func commit(_ transaction: EncodedTransaction) throws
}

/// The objects of one write transaction: BSON documents back to back in one
/// buffer, and for each the collection (class name) and its byte range.
public struct EncodedTransaction: Sendable {
    /// The BSON documents, in creation order, with no gaps.
    public var bytes: [UInt8]
    /// One entry per object, in creation order.
    public var records: [EncodedRecord]
    /// The cursors the transaction sets (``Realm/setCursor(_:named:)``), in
    /// order: committed with the records or not at all. Empty unless set.
    public var cursors: [(name: String, value: [UInt8])]

    /// Creates a transaction from its buffer and record table.
    public init(bytes: [UInt8], records: [EncodedRecord], cursors: [(name: String, value: [UInt8])] = []) {
        self.bytes = bytes
        self.records = records
        self.cursors = cursors
    }

    /// The BSON bytes of record `index`.
    public func documentBytes(at index: Int) -> ArraySlice<UInt8> {
        bytes[records[index].range]
    }
}

/// One object of an ``EncodedTransaction``.
public struct EncodedRecord: Sendable, Hashable {
    /// The class name, which is the server's collection name.
    public var collection: String
    /// Where its BSON document lies in ``EncodedTransaction/bytes``.
    public var range: Range<Int>

    /// Creates a record entry.
    public init(collection: String, range: Range<Int>) {
        self.collection = collection
        self.range = range
    }
}
