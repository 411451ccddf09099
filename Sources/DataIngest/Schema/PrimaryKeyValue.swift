import Foundation
import IngestCore

/// A primary key value, for the duplicate check within one transaction.
enum PrimaryKeyValue: Hashable {
    case int(Int64)
    case string(String)
    case objectId(ObjectId)
    case uuid(UUID)

    init?(_ value: Any) {
        switch value {
        case let id as ObjectId: self = .objectId(id)
        case let string as String: self = .string(string)
        case let uuid as UUID: self = .uuid(uuid)
        case let int as Int: self = .int(Int64(int))
        case let int as Int64: self = .int(int)
        case let int as Int32: self = .int(Int64(int))
        case let int as Int16: self = .int(Int64(int))
        case let int as Int8: self = .int(Int64(int))
        default: return nil
        }
    }

    // Direct forms for the scalar codecs: no boxing into Any.
    init(_ value: ObjectId) { self = .objectId(value) }
    init(_ value: String) { self = .string(value) }
    init(_ value: UUID) { self = .uuid(value) }
    init(_ value: Int) { self = .int(Int64(value)) }
    init(_ value: Int64) { self = .int(value) }
    init(_ value: Int32) { self = .int(Int64(value)) }

    var description: String {
        switch self {
        case .int(let value): return String(value)
        case .string(let value): return "\"\(value)\""
        case .objectId(let value): return "ObjectId(\(value.hex))"
        case .uuid(let value): return "UUID(\(value.uuidString))"
        }
    }
}
