import IngestCore
import IngestHTTP

/// The JSON answer to a processed upload (status 200), also stored in the
/// segment's receipt so that a repeated upload gets the same answer:
///
/// ```json
/// {"store_id":"6f1c…","segment_number":7,"transactions":2,"objects":3,
///  "accepted":1,"duplicate":0,"rejected":2,
///  "rejected_objects":[{"index":1,"transaction":12,"collection":"WeatherSensor",
///    "_id":{"$oid":"…"},"error_code":"wrongType","reason":"temperature: expected a double …"}, …]}
/// ```
struct UploadReport {
    struct Rejection {
        var index: Int
        var transaction: UInt64
        var collection: String
        var id: BSON?
        var code: String
        var reason: String
    }

    var key: SegmentKey
    var transactionCount: Int
    var objectCount: Int
    var accepted: Int
    var duplicate: Int
    var rejections: [Rejection]

    var json: [UInt8] {
        var out = "{\"store_id\":\(jsonQuoted(key.storeId.uuidString)),\"segment_number\":\(key.segmentNumber)"
        out += ",\"transactions\":\(transactionCount),\"objects\":\(objectCount)"
        out += ",\"accepted\":\(accepted),\"duplicate\":\(duplicate),\"rejected\":\(rejections.count),\"rejected_objects\":["
        for (position, rejection) in rejections.enumerated() {
            if position > 0 { out += "," }
            out += "{\"index\":\(rejection.index),\"transaction\":\(rejection.transaction)"
            out += ",\"collection\":\(jsonQuoted(rejection.collection))"
            out += ",\"_id\":\(rejection.id?.extendedJSON(.relaxed) ?? "null")"
            out += ",\"error_code\":\(jsonQuoted(rejection.code)),\"reason\":\(jsonQuoted(rejection.reason))}"
        }
        out += "]}"
        return Array(out.utf8)
    }
}
