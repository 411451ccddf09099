import IngestCore

extension StrictJSON {
    /// The same value as IngestCore's ``JSONValue``, which the wire
    /// protocol's bodies (IngestCore/Protocol) decode from: the server parses
    /// request bodies strictly (duplicate keys refused, errors by line and
    /// column), then hands them to the shared decoders.
    ///
    /// ```swift
    /// let request = try LoginRequest(json: try StrictJSON(parsing: body).jsonValue)
    /// ```
    package var jsonValue: JSONValue {
        switch self {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let text): .number(text)
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(\.jsonValue))
        case .object(let members): .object(members.map { JSONValue.Member(key: $0.key, value: $0.value.jsonValue) })
        }
    }
}
