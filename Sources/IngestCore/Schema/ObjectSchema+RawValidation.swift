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
            /// Bit t: a non-null element of type byte t (below 32) is a
            /// form of the property's type; 0 for what the quick pass
            /// cannot judge (lists, objects, mixed).
            var accepted: UInt32
            /// The further check the value needs (a float's range, a binary subtype).
            var extra: Extra
            /// A single optional property of any type: null is valid for it.
            var nullable: Bool
        }

        private enum Extra: Sendable {
            case none, floatRange, genericBinary, uuidBinary
        }

        /// The property names' UTF-8 bytes, one after the other, and 8 zero bytes.
        private let keyBytes: [UInt8]
        /// `keyStarts[i]..<keyStarts[i + 1]` holds property `i`'s name.
        private let keyStarts: [Int]
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
            var keyBytes: [UInt8] = []
            var keyStarts = [0]
            for name in propertyNames {
                keyBytes.append(contentsOf: name.utf8)
                keyStarts.append(keyBytes.count)
            }
            // Eight more bytes, so that a word can be loaded at any name's start.
            keyBytes.append(contentsOf: repeatElement(0, count: 8))
            self.keyBytes = keyBytes
            self.keyStarts = keyStarts
            slots = properties.map {
                let judged = $0.collection == .single && $0.type != .object && $0.type != .mixed
                let (accepted, extra) = judged ? Self.forms($0.type) : (0, .none)
                return Slot(accepted: accepted, extra: extra, nullable: $0.collection == .single && $0.isOptional)
            }
            tooMany = properties.count > 64
            var required: UInt64 = 0
            for (index, property) in properties.enumerated().prefix(64)
            where property.collection == .single && !property.isOptional {
                required |= 1 << UInt64(index)
            }
            self.required = required
        }

        /// The BSON type bytes that hold a scalar `type` (the rules of the
        /// validator's `matches`), and what more the value needs.
        private static func forms(_ type: PropertyType) -> (UInt32, Extra) {
            func bits(_ types: BSONType...) -> UInt32 { types.reduce(0) { $0 | 1 << UInt32($1.rawValue) } }
            switch type {
            case .bool: return (bits(.bool), .none)
            case .int: return (bits(.int64, .int32), .none)
            case .double: return (bits(.double), .none)
            case .string: return (bits(.string), .none)
            case .date: return (bits(.datetime), .none)
            case .decimal128: return (bits(.decimal128), .none)
            case .objectId: return (bits(.objectId), .none)
            case .float: return (bits(.double), .floatRange)
            case .data: return (bits(.binary), .genericBinary)
            case .uuid: return (bits(.binary), .uuidBinary)
            default: return (0, .none)
            }
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
            mutating func found(_ index: Int, _ span: BSONElementSpan)
        }

        private struct NoSpans: SpanRecorder {
            @inline(__always) mutating func found(_ index: Int, _ span: BSONElementSpan) {}
        }

        private struct SpanBuffer: SpanRecorder {
            let spans: UnsafeMutableBufferPointer<BSONElementSpan>
            @inline(__always) mutating func found(_ index: Int, _ span: BSONElementSpan) { spans[index] = span }
        }

        // One loop over the elements with the checks of
        // `BSONDocument.forEachElement` (the same decoder functions, in the
        // same order), the key found by position first, and the type judged
        // from the type byte: no closure and no `BSONElement` per element.
        // The first element that is not proven ends the walk: the answer is
        // false whether or not the rest of the bytes are valid.
        @inline(__always)
        private func check<Recorder: SpanRecorder>(_ bson: UnsafeRawBufferPointer, recording recorder: inout Recorder) -> Bool {
            guard !tooMany, let base = bson.baseAddress else { return false }
            let decoder = BSONDecoder(bson, maxDepth: BSONDecodingOptions().maxDepth)
            do { try decoder.checkTopLevelLength() } catch { return false }
            return keyBytes.withUnsafeBytes { names in
                keyStarts.withUnsafeBufferPointer { starts in
                    slots.withUnsafeBufferPointer { slots in
                        let last = bson.count - 1
                        var seen: UInt64 = 0
                        var position = 0
                        var offset = 4
                        while offset < last {
                            let typeByte = base.load(fromByteOffset: offset, as: UInt8.self)
                            if typeByte == 0 { break }
                            let keyStart = offset + 1
                            // The key: its NUL before `last`, valid UTF-8 (skipCString's checks).
                            guard let (keyLength, ascii) = BSONDecoder.nulAndASCII(in: base + keyStart, count: last - keyStart),
                                ascii || BSONDecoder.isValidUTF8(UnsafeRawBufferPointer(start: base + keyStart, count: keyLength))
                            else { return false }
                            let valueOffset = keyStart + keyLength + 1
                            offset = valueOffset
                            // skipValue's fixed sizes in line (its call and switch were
                            // about 50 instructions per element); the rest through it.
                            let fixed = Self.fixedSize(typeByte)
                            if fixed >= 0 {
                                guard fixed <= last - offset else { return false }
                                offset += fixed
                            } else {
                                do { try decoder.skipValue(type: typeByte, at: &offset, limit: last, depth: 1) } catch { return false }
                            }
                            guard
                                let index = Self.index(
                                    of: base + keyStart, count: keyLength, wordFits: keyStart + 8 <= bson.count, hint: position,
                                    names: names, starts: starts)
                            else { return false }
                            position += 1
                            let bit: UInt64 = 1 << UInt64(index)
                            guard seen & bit == 0 else { return false }
                            seen |= bit
                            recorder.found(
                                index,
                                BSONElementSpan(
                                    start: Int32(truncatingIfNeeded: keyStart - 1),
                                    valueOffset: Int32(truncatingIfNeeded: valueOffset), end: Int32(truncatingIfNeeded: offset)))
                            let slot = slots[index]
                            // Null is judged by optionality alone, whatever the type
                            // (a plain forwarded line's mixed `fields` is null).
                            if typeByte == BSONType.null.rawValue {
                                guard slot.nullable else { return false }
                                continue
                            }
                            guard typeByte < 32, slot.accepted & 1 << UInt32(typeByte) != 0,
                                Self.extraHolds(slot.extra, base + valueOffset)
                            else { return false }
                        }
                        do { try decoder.finishDocument(at: offset, last: last) } catch { return false }
                        return seen & required == required
                    }
                }
            }
        }

        /// The size of a value of type `type` where `BSONDecoder.skipValue`
        /// only checks that a fixed size fits (the same types), else -1.
        @inline(__always)
        private static func fixedSize(_ type: UInt8) -> Int {
            switch type {
            case 0x01, 0x09, 0x11, 0x12: return 8
            case 0x10: return 4
            case 0x07: return 12
            case 0x13: return 16
            case 0x06, 0x0A, 0xFF, 0x7F: return 0
            default: return -1
            }
        }

        /// The index of the property named by the `count` bytes at `key`:
        /// `hint` first (records list their fields in schema order), else
        /// the first that matches; nil if none does.
        /// `wordFits`: 8 bytes can be read at `key` (it is not at the very
        /// end of the document).
        @inline(__always)
        private static func index(
            of key: UnsafeRawPointer, count: Int, wordFits: Bool, hint: Int, names: UnsafeRawBufferPointer,
            starts: UnsafeBufferPointer<Int>
        ) -> Int? {
            let properties = starts.count - 1
            if hint < properties, starts[hint + 1] - starts[hint] == count,
                equal(key, names.baseAddress.unsafelyUnwrapped + starts[hint], count, wordFits: wordFits)
            {
                return hint
            }
            for index in 0..<properties where index != hint && starts[index + 1] - starts[index] == count {
                if equal(key, names.baseAddress.unsafelyUnwrapped + starts[index], count, wordFits: wordFits) { return index }
            }
            return nil
        }

        /// Byte equality of two short keys, eight bytes at a time (the last
        /// word overlapping the one before it); a key of fewer than 8 bytes
        /// as one masked word where 8 bytes can be read at both (`b` is a
        /// name in the padded buffer), else byte by byte.
        @inline(__always)
        private static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int, wordFits: Bool) -> Bool {
            @inline(__always) func word(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
                p.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            }
            if count >= 8 {
                var index = 0
                while index + 8 < count {
                    if word(a, index) != word(b, index) { return false }
                    index += 8
                }
                return word(a, count - 8) == word(b, count - 8)
            }
            if wordFits {
                let mask: UInt64 = (1 &<< UInt64(count &* 8)) &- 1
                return (word(a, 0) ^ word(b, 0)) & mask == 0
            }
            var index = 0
            while index < count {
                if a.load(fromByteOffset: index, as: UInt8.self) != b.load(fromByteOffset: index, as: UInt8.self) { return false }
                index += 1
            }
            return true
        }

        /// The value checks beyond the type byte, for the value at `value`
        /// (skipValue has checked that it fits): a float in range, a binary's subtype.
        @inline(__always)
        private static func extraHolds(_ extra: Extra, _ value: UnsafeRawPointer) -> Bool {
            switch extra {
            case .none:
                return true
            case .floatRange:
                let number = Double(bitPattern: UInt64(littleEndian: value.loadUnaligned(as: UInt64.self)))
                return !(number.isFinite && abs(number) > Double(Float.greatestFiniteMagnitude))
            case .genericBinary:
                return value.load(fromByteOffset: 4, as: UInt8.self) == BSONBinary.Subtype.generic
            case .uuidBinary:
                // The declared length is the payload's: subtype 4 has no inner length.
                return value.load(fromByteOffset: 4, as: UInt8.self) == BSONBinary.Subtype.uuid
                    && Int32(littleEndian: value.loadUnaligned(as: Int32.self)) == 16
            }
        }

        /// ``isCertainlyValid(bson:)`` over an array of bytes.
        public func isCertainlyValid(bson: [UInt8]) -> Bool {
            bson.withUnsafeBytes { isCertainlyValid(bson: $0) }
        }
    }
}
