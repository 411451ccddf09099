/// An ordered BSON document: keys keep the order in which they were added
/// (or decoded), as BSON requires for byte-exact round trips.
///
/// Lookup by key is a linear scan, which is the fastest choice for the small
/// documents (a handful of fields) that records are made of. A document is a
/// value: copies share their fields until one of them changes.
///
/// ```swift
/// var doc: BSONDocument = ["deviceId": "WX1278UIT"]
/// doc["windSpeedInMph"] = .int64(2)
/// for (key, value) in doc { print(key, value) }
/// ```
public struct BSONDocument: @unchecked Sendable {
    // @unchecked: the buffer is a class, written only through `makeUnique`
    // when this document holds the only reference, so no two threads can
    // see a write (the copy-on-write rule that makes Array Sendable).

    /// One key and its value.
    public struct Field: Sendable, Hashable {
        /// The field's name.
        public var key: String
        /// The field's value.
        public var value: BSON

        /// A field named `key` holding `value`.
        public init(key: String, value: BSON) {
            self.key = key
            self.value = value
        }
    }

    /// The fields, shared with copies of this document until one changes.
    var buffer: BSONFieldBuffer

    /// An empty document.
    public init() { buffer = BSONFieldBuffer.empty }

    /// A document with the given fields, in order.
    public init(fields: [Field]) {
        buffer = BSONFieldBuffer.make(capacity: fields.count)
        fields.withUnsafeBufferPointer { source in
            if let start = source.baseAddress { buffer.fields.initialize(from: start, count: source.count) }
        }
        buffer.count = fields.count
    }

    /// A document that takes `buffer` over (its fields are this document's).
    init(buffer: BSONFieldBuffer) { self.buffer = buffer }

    /// The fields in order. Duplicate keys are kept as decoded.
    public var fields: [Field] {
        withFields { Array($0) }
    }

    /// Calls `body` with the fields in place, without copying them.
    @inline(__always)
    func withFields<R, E: Error>(_ body: (UnsafeBufferPointer<Field>) throws(E) -> R) throws(E) -> R {
        let buffer = self.buffer
        defer { withExtendedLifetime(buffer) {} }
        return try body(UnsafeBufferPointer(start: buffer.fields, count: buffer.count))
    }

    /// Reserves room for `count` fields.
    public mutating func reserveCapacity(_ count: Int) {
        if buffer.fieldCapacity < count || !isKnownUniquelyReferenced(&buffer) {
            replaceBuffer(capacity: count)
        }
    }

    /// Makes the buffer this document's own with room for `extra` more
    /// fields, copying or growing it when needed.
    @inline(__always)
    mutating func makeUnique(extra: Int) {
        let needed = buffer.count + extra
        if _slowPath(!isKnownUniquelyReferenced(&buffer) || buffer.fieldCapacity < needed) {
            regrow(needed: needed)
        }
    }

    @inline(never)
    private mutating func regrow(needed: Int) {
        // Doubling keeps appends amortised O(1); 4 is a typical small record.
        replaceBuffer(capacity: Swift.max(needed, buffer.fieldCapacity * 2, 4))
    }

    /// A buffer of its own with room for `capacity` (at least the current
    /// count) fields: the fields are moved when this document held the only
    /// reference, copied when it shared them.
    private mutating func replaceBuffer(capacity: Int) {
        buffer = isKnownUniquelyReferenced(&buffer) ? buffer.moving(toCapacity: capacity) : buffer.copy(capacity: capacity)
    }

    /// The value of the first field named `key`. Setting a value replaces
    /// that field in place or appends a new one; setting `nil` removes it.
    public subscript(key: String) -> BSON? {
        get {
            withFields { fields in
                for field in fields where field.key == key { return field.value }
                return nil
            }
        }
        set {
            if let index = firstIndex(of: key) {
                makeUnique(extra: 0)
                let fields = buffer.fields
                if let newValue {
                    fields[index].value = newValue
                } else {
                    // Close the gap: destroy the field, move the rest down.
                    let count = buffer.count
                    (fields + index).deinitialize(count: 1)
                    (fields + index).moveInitialize(from: fields + index + 1, count: count - index - 1)
                    buffer.count = count - 1
                }
            } else if let newValue {
                append(key, newValue)
            }
        }
    }

    /// The position of the first field named `key`.
    func firstIndex(of key: String) -> Int? {
        withFields { fields in fields.firstIndex { $0.key == key } }
    }

    /// Appends a field without checking for an existing key.
    public mutating func append(_ key: String, _ value: BSON) {
        makeUnique(extra: 1)
        (buffer.fields + buffer.count).initialize(to: Field(key: key, value: value))
        buffer.count += 1
    }

    /// The keys, in order.
    public var keys: [String] { withFields { $0.map(\.key) } }
}

extension BSONDocument: RandomAccessCollection {
    /// The position of the first field.
    public var startIndex: Int { 0 }
    /// One past the position of the last field.
    public var endIndex: Int { buffer.count }
    /// The key and value of the field at `position`.
    public subscript(position: Int) -> (key: String, value: BSON) {
        precondition(position >= 0 && position < buffer.count, "BSONDocument index out of range")
        return withFields { fields in (fields[position].key, fields[position].value) }
    }
}

extension BSONDocument: Hashable {
    /// Documents are equal when they have equal fields in the same order.
    public static func == (lhs: BSONDocument, rhs: BSONDocument) -> Bool {
        if lhs.buffer === rhs.buffer { return true }
        return lhs.withFields { left in rhs.withFields { right in left.elementsEqual(right) } }
    }

    /// Hashes the fields in order.
    public func hash(into hasher: inout Hasher) {
        withFields { fields in
            hasher.combine(fields.count)
            for field in fields { hasher.combine(field) }
        }
    }
}

extension BSONDocument: CustomStringConvertible {
    /// The document as relaxed Extended JSON.
    public var description: String { extendedJSON() }
}

extension BSONDocument: ExpressibleByDictionaryLiteral {
    /// A document with the literal's fields, in order (duplicates kept).
    public init(dictionaryLiteral elements: (String, BSON)...) {
        self.init(fields: elements.map { Field(key: $0.0, value: $0.1) })
    }
}
