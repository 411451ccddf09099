import Foundation

/// The server's answer to an accepted upload (Docs/Protocol.md, "The result").
struct UploadResult: Decodable, Sendable {
    struct RejectedObject: Decodable, Sendable {
        var index: Int
        var collection: String
        var errorCode: String
        var reason: String
        var id: String?

        enum CodingKeys: String, CodingKey {
            case index, collection, reason, id = "_id", errorCode = "error_code"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            index = try container.decode(Int.self, forKey: .index)
            collection = try container.decode(String.self, forKey: .collection)
            errorCode = try container.decode(String.self, forKey: .errorCode)
            reason = try container.decode(String.self, forKey: .reason)
            id = nil
        }
    }

    var segmentNumber: UInt64
    var objects: Int
    var accepted: Int
    var duplicate: Int
    var rejected: Int
    var rejectedObjects: [RejectedObject]

    enum CodingKeys: String, CodingKey {
        case objects, accepted, duplicate, rejected
        case segmentNumber = "segment_number"
        case rejectedObjects = "rejected_objects"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        segmentNumber = try container.decode(UInt64.self, forKey: .segmentNumber)
        objects = try container.decode(Int.self, forKey: .objects)
        accepted = try container.decode(Int.self, forKey: .accepted)
        duplicate = try container.decode(Int.self, forKey: .duplicate)
        rejected = try container.decode(Int.self, forKey: .rejected)
        rejectedObjects = try container.decodeIfPresent([RejectedObject].self, forKey: .rejectedObjects) ?? []
    }

    /// Decodes the body; the `_id`s (arbitrary Extended JSON) are re-serialized as text.
    static func decode(_ body: Data) throws -> UploadResult {
        var result = try JSONDecoder().decode(UploadResult.self, from: body)
        if let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
           let rejected = object["rejected_objects"] as? [[String: Any]] {
            for (i, entry) in rejected.enumerated() where i < result.rejectedObjects.count {
                if let id = entry["_id"], !(id is NSNull),
                   let data = try? JSONSerialization.data(withJSONObject: id, options: [.fragmentsAllowed, .sortedKeys]) {
                    result.rejectedObjects[i].id = String(decoding: data, as: UTF8.self)
                }
            }
        }
        return result
    }
}
