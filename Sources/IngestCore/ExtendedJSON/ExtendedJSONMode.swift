/// The two Extended JSON v2 output formats.
///
/// ```swift
/// let doc: BSONDocument = ["n": .int32(5)]
/// doc.extendedJSON(.canonical)  // {"n":{"$numberInt":"5"}}
/// doc.extendedJSON(.relaxed)    // {"n":5}
/// ```
public enum ExtendedJSONMode: Sendable, Hashable {
    /// Every value keeps its exact BSON type: numbers, dates and the rest
    /// are written as type wrappers (`{"$numberInt": "5"}`).
    case canonical
    /// Readable JSON: int32, int64 and finite doubles are plain JSON
    /// numbers, dates in 1970...9999 are ISO-8601 strings. Parsing it back
    /// may change numeric types (an int64 that fits 32 bits becomes int32).
    case relaxed
}

/// Limits for reading Extended JSON.
public struct ExtendedJSONParsingOptions: Sendable, Hashable {
    /// The deepest nesting of JSON objects and arrays accepted (type
    /// wrappers count as levels). Deeper input throws
    /// ``ExtendedJSONError/Code/depthLimitExceeded``. Default 200, the
    /// minimum the Extended JSON specification asks parsers to support.
    /// Parsing recurses on the calling thread's stack, so values above
    /// ``depthCeiling`` (1000) are treated as 1000.
    public var maxDepth: Int = 200

    /// The largest effective ``maxDepth``: deep enough for any real
    /// document, shallow enough for a 512 KiB thread stack in debug builds.
    public static let depthCeiling = 1000

    var effectiveMaxDepth: Int { min(maxDepth, Self.depthCeiling) }

    public init(maxDepth: Int = 200) {
        self.maxDepth = maxDepth
    }
}
