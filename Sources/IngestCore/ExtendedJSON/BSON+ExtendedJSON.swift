extension BSONDocument {
    /// Parses an Extended JSON v2 document, canonical or relaxed (or a mix),
    /// including the legacy `$binary`/`$type` and `$regex`/`$options` forms.
    ///
    /// The text must be a JSON object; its keys are field names (a
    /// top-level object is never read as a type wrapper). Nested objects
    /// with wrapper keys (`$oid`, `$date`, `$numberLong`, …) become those
    /// BSON values; a wrapper with missing, extra or mistyped keys throws.
    ///
    /// ```swift
    /// let doc = try BSONDocument(extendedJSON: #"{"_id": {"$oid": "57e193d7a9cc81b4027498b5"}, "n": 42}"#)
    /// doc["n"]  // .int32(42)
    /// ```
    public init(extendedJSON text: String, options: ExtendedJSONParsingOptions = ExtendedJSONParsingOptions()) throws(ExtendedJSONError) {
        let json = try JSONValue.extendedJSONLayer(text, maxDepth: options.effectiveMaxDepth)
        guard case .object(let members) = json else {
            throw ExtendedJSONError(code: .notADocument, message: "the Extended JSON text is not a JSON object")
        }
        self = try ExtendedJSONReader.document(from: members)
    }

    /// The document as Extended JSON v2 text, compact (no whitespace), keys
    /// in document order. Relaxed is the readable default.
    ///
    /// ```swift
    /// let doc: BSONDocument = ["t": .datetime(0), "x": .double(1)]
    /// doc.extendedJSON()            // {"t":{"$date":"1970-01-01T00:00:00Z"},"x":1.0}
    /// doc.extendedJSON(.canonical)  // {"t":{"$date":{"$numberLong":"0"}},"x":{"$numberDouble":"1.0"}}
    /// ```
    public func extendedJSON(_ mode: ExtendedJSONMode = .relaxed) -> String {
        var writer = ExtendedJSONWriter(mode: mode)
        writer.write(self)
        return String(decoding: writer.out, as: UTF8.self)
    }
}

extension BSON {
    /// Parses any Extended JSON v2 value; a top-level object may be a type
    /// wrapper.
    ///
    /// ```swift
    /// let big = try BSON(extendedJSON: #"{"$numberLong": "42"}"#)   // .int64(42)
    /// let list = try BSON(extendedJSON: "[1, 2.5, null]")
    /// ```
    public init(extendedJSON text: String, options: ExtendedJSONParsingOptions = ExtendedJSONParsingOptions()) throws(ExtendedJSONError) {
        let json = try JSONValue.extendedJSONLayer(text, maxDepth: options.effectiveMaxDepth)
        self = try ExtendedJSONReader.value(from: json)
    }

    /// The value as Extended JSON v2 text, compact.
    ///
    /// ```swift
    /// BSON.int64(42).extendedJSON(.canonical)  // {"$numberLong":"42"}
    /// ```
    public func extendedJSON(_ mode: ExtendedJSONMode = .relaxed) -> String {
        var writer = ExtendedJSONWriter(mode: mode)
        writer.write(self)
        return String(decoding: writer.out, as: UTF8.self)
    }
}
