/// The answer to a processed upload (200), which the server also keeps in
/// the segment's receipt and sends again, byte for byte, for a repeated
/// upload:
///
/// ```json
/// {"store_id":"6f1c…","segment_number":7,"transactions":2,"objects":3,
///  "accepted":1,"duplicate":0,"rejected":2,
///  "rejected_objects":[{"index":1,"transaction":12,"collection":"WeatherSensor",
///    "_id":{"$oid":"…"},"error_code":"wrongType","reason":"temperature: expected a double …"}, …]}
/// ```
///
/// `accepted + duplicate + rejected = objects`. A client quarantines the
/// rejected objects (found by `index`) before it deletes the segment.
///
/// ```swift
/// let answer = try UploadAnswer(jsonBody: response.body)
/// for object in answer.rejectedObjects { quarantine(object.index, object.errorCode, object.reason) }
/// ```
package struct UploadAnswer: ProtocolBody, Hashable {
    /// One object the server did not store, and why.
    package struct RejectedObject: Sendable, Hashable {
        /// The record's 0-based position in the segment.
        package var index: Int
        /// The transaction number of its commit frame.
        package var transaction: UInt64
        /// The record's collection name.
        package var collection: String
        /// The object's `_id` as relaxed Extended JSON text (one JSON value,
        /// `{"$oid":"…"}` for an ObjectId); nil if it has none or its BSON is
        /// unreadable (`null` on the wire).
        package var id: String?
        /// The per-object code: `wrongType`, `unknownClass`, `transactionRejected`, …
        package var errorCode: String
        /// Every problem found, for people.
        package var reason: String

        /// Creates an entry.
        package init(index: Int, transaction: UInt64, collection: String, id: String?, errorCode: String, reason: String) {
            self.index = index
            self.transaction = transaction
            self.collection = collection
            self.id = id
            self.errorCode = errorCode
            self.reason = reason
        }
    }

    /// The segment header's store id, as a UUID string.
    package var storeId: String
    /// The segment header's segment number.
    package var segmentNumber: UInt64
    /// Commit frames in the segment.
    package var transactions: Int
    /// Record frames in the segment.
    package var objects: Int
    /// Objects newly stored.
    package var accepted: Int
    /// Objects whose `_id` was already stored (not written again).
    package var duplicate: Int
    /// Objects not stored.
    package var rejected: Int
    /// One entry per rejected object, in record order.
    package var rejectedObjects: [RejectedObject]

    /// Creates an answer; `rejected` is the number of `rejectedObjects`.
    package init(
        storeId: String, segmentNumber: UInt64, transactions: Int, objects: Int, accepted: Int, duplicate: Int,
        rejectedObjects: [RejectedObject]
    ) {
        self.storeId = storeId
        self.segmentNumber = segmentNumber
        self.transactions = transactions
        self.objects = objects
        self.accepted = accepted
        self.duplicate = duplicate
        self.rejected = rejectedObjects.count
        self.rejectedObjects = rejectedObjects
    }

    package init(json: JSONValue) throws(ProtocolBodyError) {
        let object = try JSONObjectReader(json)
        storeId = try object.string("store_id")
        segmentNumber = try object.integer("segment_number")
        transactions = try object.integer("transactions")
        objects = try object.integer("objects")
        accepted = try object.integer("accepted")
        duplicate = try object.integer("duplicate")
        rejected = try object.integer("rejected")
        var entries: [RejectedObject] = []
        for (position, value) in try object.array("rejected_objects").enumerated() {
            let entry = try JSONObjectReader(value, path: "rejected_objects[\(position)]")
            var id: String?
            if let value = entry["_id"], value != .null { id = value.jsonText }
            entries.append(
                RejectedObject(
                    index: try entry.integer("index"), transaction: try entry.integer("transaction"),
                    collection: try entry.string("collection"), id: id,
                    errorCode: try entry.string("error_code"), reason: try entry.string("reason")))
        }
        rejectedObjects = entries
    }

    package func encode(to writer: inout JSONBodyWriter) {
        writer.beginObject()
        writer.key("store_id")
        writer.string(storeId)
        writer.key("segment_number")
        writer.integer(segmentNumber)
        writer.key("transactions")
        writer.integer(transactions)
        writer.key("objects")
        writer.integer(objects)
        writer.key("accepted")
        writer.integer(accepted)
        writer.key("duplicate")
        writer.integer(duplicate)
        writer.key("rejected")
        writer.integer(rejected)
        writer.key("rejected_objects")
        writer.beginArray()
        for entry in rejectedObjects {
            writer.beginObject()
            writer.key("index")
            writer.integer(entry.index)
            writer.key("transaction")
            writer.integer(entry.transaction)
            writer.key("collection")
            writer.string(entry.collection)
            writer.key("_id")
            if let id = entry.id { writer.raw(id) } else { writer.null() }
            writer.key("error_code")
            writer.string(entry.errorCode)
            writer.key("reason")
            writer.string(entry.reason)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
    }
}
