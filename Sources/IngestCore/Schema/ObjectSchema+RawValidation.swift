extension ObjectSchema {
    /// The server's fast path: whether the encoded document `bson` is
    /// certainly a valid object of this class, checked straight from the
    /// bytes without decoding it into a ``BSONDocument``.
    ///
    /// True means two things: the bytes are one valid BSON document (checked
    /// exactly as `BSONDocument(bson:)` checks them), and every field is a
    /// distinct property of this class holding a single scalar value of its
    /// type, or null where a single property (of any type, mixed and embedded
    /// objects included) is optional, with every required property present, so
    /// that ``validate(_:in:)`` would report no violations. False means only
    /// "not proven": decode the document and validate it fully to learn
    /// whether it is valid and why not. The answer never depends on the path.
    /// For many documents, prepare a ``QuickCheck`` once instead.
    ///
    /// ```swift
    /// if !sensorSchema.isCertainlyValid(bson: raw) {
    ///     let violations = sensorSchema.validate(try BSONDocument(bson: raw), in: schema)
    /// }
    /// ```
    public func isCertainlyValid(bson: UnsafeRawBufferPointer) -> Bool {
        QuickCheck(self).isCertainlyValid(bson: bson)
    }

    /// ``isCertainlyValid(bson:)`` over an array of bytes.
    public func isCertainlyValid(bson: [UInt8]) -> Bool {
        bson.withUnsafeBytes { isCertainlyValid(bson: $0) }
    }

    /// ``ObjectSchema/isCertainlyValid(bson:)`` prepared once for a class:
    /// property names in one buffer, types as plain values, the required set
    /// as a bit mask, so that checking a document allocates nothing.
    ///
    /// ```swift
    /// let check = ObjectSchema.QuickCheck(sensorSchema)
    /// let proven = records.map { check.isCertainlyValid(bson: $0) }
    /// ```
    public struct QuickCheck: Sendable {
        private struct Slot: Sendable {
            var type: PropertyType
            /// A single scalar (not an object, not mixed): the quick pass can judge it.
            var judged: Bool
            /// A single optional property of any type: null is valid for it.
            var nullable: Bool
        }

        private let keys: BSONKeyTable
        private let slots: [Slot]
        /// The class's property names, in the order of the spans
        /// ``isCertainlyValid(bson:spans:)`` records.
        public let propertyNames: [String]
        /// Bit i: property i is a required single value.
        private let required: UInt64
        /// More than 64 properties: never proven (the full check decides).
        private let tooMany: Bool

        /// Prepares the check for `object`.
        public init(_ object: ObjectSchema) {
            let properties = object.properties
            propertyNames = properties.map(\.name)
            keys = BSONKeyTable(propertyNames)
            slots = properties.map {
                Slot(
                    type: $0.type, judged: $0.collection == .single && $0.type != .object && $0.type != .mixed,
                    nullable: $0.collection == .single && $0.isOptional)
            }
            tooMany = properties.count > 64
            var required: UInt64 = 0
            for (index, property) in properties.enumerated().prefix(64)
            where property.collection == .single && !property.isOptional {
                required |= 1 << UInt64(index)
            }
            self.required = required
        }

        /// See ``ObjectSchema/isCertainlyValid(bson:)``.
        public func isCertainlyValid(bson: UnsafeRawBufferPointer) -> Bool {
            var none = NoSpans()
            return check(bson, recording: &none)
        }

        /// ``isCertainlyValid(bson:)``, also recording where each property's
        /// element is: when it returns true, `spans[i]` is the span of
        /// property `i`'s element (``propertyNames`` order), or
        /// ``BSONElementSpan/absent``; a sink can then read the fields with
        /// ``BSONElement/init(_:in:maxDepth:)`` instead of walking the
        /// document again. `spans` must hold at least
        /// `propertyNames.count` entries.
        ///
        /// ```swift
        /// var spans = [BSONElementSpan](repeating: .absent, count: check.propertyNames.count)
        /// let proven = spans.withUnsafeMutableBufferPointer { check.isCertainlyValid(bson: raw, spans: $0) }
        /// ```
        public func isCertainlyValid(bson: UnsafeRawBufferPointer, spans: UnsafeMutableBufferPointer<BSONElementSpan>) -> Bool {
            guard spans.count >= slots.count else { return false }
            for index in 0..<slots.count { spans[index] = .absent }
            var recorder = SpanBuffer(spans: spans)
            return check(bson, recording: &recorder)
        }

        /// Where a check puts the elements it matched (generic, so that the
        /// plain check compiles to no recording at all).
        private protocol SpanRecorder {
            mutating func found(_ index: Int, _ element: BSONElement)
        }

        private struct NoSpans: SpanRecorder {
            @inline(__always) mutating func found(_ index: Int, _ element: BSONElement) {}
        }

        private struct SpanBuffer: SpanRecorder {
            let spans: UnsafeMutableBufferPointer<BSONElementSpan>
            @inline(__always) mutating func found(_ index: Int, _ element: BSONElement) { spans[index] = element.span }
        }

        @inline(__always)
        private func check<Recorder: SpanRecorder>(_ bson: UnsafeRawBufferPointer, recording recorder: inout Recorder) -> Bool {
            guard !tooMany else { return false }
            var seen: UInt64 = 0
            var valid = true
            var position = 0
            do {
                try BSONDocument.forEachElement(in: bson) { element in
                    defer { position += 1 }
                    guard valid else { return }  // keep iterating: the bytes must still be checked whole
                    guard let index = keys.index(of: element, hint: position) else {
                        valid = false
                        return
                    }
                    let bit: UInt64 = 1 << UInt64(index)
                    let slot = slots[index]
                    guard seen & bit == 0 else {
                        valid = false
                        return
                    }
                    seen |= bit
                    recorder.found(index, element)
                    // Null is judged by optionality alone, whatever the type
                    // (a plain forwarded line's mixed `fields` is null).
                    if element.type == .null {
                        if !slot.nullable { valid = false }
                        return
                    }
                    if !slot.judged || !Self.matches(element, slot.type) { valid = false }
                }
            } catch {
                return false
            }
            return valid && seen & required == required
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
}
