extension ObjectSchema {
    /// The server's fast path: whether the encoded document `bson` is
    /// certainly a valid object of this class, checked straight from the
    /// bytes without decoding it into a ``BSONDocument``.
    ///
    /// True means two things: the bytes are one valid BSON document (checked
    /// exactly as `BSONDocument(bson:)` checks them), and every field is a
    /// distinct property of this class holding a single scalar value of its
    /// type (or null where optional) with every required property present, so
    /// that ``validate(_:in:)`` would report no violations. False means only
    /// "not proven": decode the document and validate it fully to learn
    /// whether it is valid and why not. The answer never depends on the path.
    ///
    /// ```swift
    /// if !sensorSchema.isCertainlyValid(bson: raw) {
    ///     let violations = sensorSchema.validate(try BSONDocument(bson: raw), in: schema)
    /// }
    /// ```
    public func isCertainlyValid(bson: UnsafeRawBufferPointer) -> Bool {
        let properties = self.properties
        guard properties.count <= 64 else { return false }
        var seen: UInt64 = 0
        var valid = true
        var position = 0
        do {
            try BSONDocument.forEachElement(in: bson) { element in
                defer { position += 1 }
                guard valid else { return }   // keep iterating: the bytes must still be checked whole
                // Clients write fields in schema order: try the same position first.
                let index: Int
                if position < properties.count && element.keyEquals(properties[position].name) {
                    index = position
                } else if let found = properties.firstIndex(where: { element.keyEquals($0.name) }) {
                    index = found
                } else {
                    valid = false
                    return
                }
                let bit: UInt64 = 1 << UInt64(index)
                let property = properties[index]
                guard seen & bit == 0, property.collection == .single,
                      property.type != .object, property.type != .mixed else {
                    valid = false
                    return
                }
                seen |= bit
                if element.type == .null {
                    if !property.isOptional { valid = false }
                    return
                }
                if !Self.matches(element, property.type) { valid = false }
            }
        } catch {
            return false
        }
        guard valid else { return false }
        for (index, property) in properties.enumerated()
        where seen & (1 << UInt64(index)) == 0 && property.collection == .single && !property.isOptional {
            return false
        }
        return true
    }

    /// ``isCertainlyValid(bson:)`` over an array of bytes.
    public func isCertainlyValid(bson: [UInt8]) -> Bool {
        bson.withUnsafeBytes { isCertainlyValid(bson: $0) }
    }

    /// Whether a non-null element is an accepted form of the scalar `type`
    /// (the rules of the validator's `matches`, read from the bytes), with
    /// floats in range.
    private static func matches(_ element: BSONElement, _ type: PropertyType) -> Bool {
        switch (type, element.type) {
        case (.bool, .bool), (.int, .int64), (.int, .int32), (.double, .double),
             (.string, .string), (.date, .datetime), (.decimal128, .decimal128), (.objectId, .objectId):
            return true
        case (.float, .double):
            guard let number = element.double else { return false }
            return !(number.isFinite && abs(number) > Double(Float.greatestFiniteMagnitude))
        case (.data, .binary):
            return element.binarySubtype == BSONBinary.Subtype.generic
        case (.uuid, .binary):
            // The declared length is the payload's: subtype 4 has no inner length.
            return element.binarySubtype == BSONBinary.Subtype.uuid && element.binaryDeclaredLength == 16
        default:
            return false
        }
    }
}
