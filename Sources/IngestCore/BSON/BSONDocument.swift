/// An ordered BSON document: keys keep the order in which they were added
/// (or decoded), as BSON requires for byte-exact round trips.
///
/// Lookup by key is a linear scan, which is the fastest choice for the small
/// documents (a handful of fields) that records are made of.
///
/// ```swift
/// var doc: BSONDocument = ["deviceId": "WX1278UIT"]
/// doc["windSpeedInMph"] = .int64(2)
/// for (key, value) in doc { print(key, value) }
/// ```
public struct BSONDocument: Sendable, Hashable {
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

    /// The fields in order. Duplicate keys are kept as decoded.
    public private(set) var fields: [Field]

    /// An empty document.
    public init() { fields = [] }

    /// A document with the given fields, in order.
    public init(fields: [Field]) { self.fields = fields }

    /// Reserves room for `count` fields.
    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// The value of the first field named `key`. Setting a value replaces
    /// that field in place or appends a new one; setting `nil` removes it.
    public subscript(key: String) -> BSON? {
        get {
            for element in fields where element.key == key { return element.value }
            return nil
        }
        set {
            if let index = fields.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    fields[index].value = newValue
                } else {
                    fields.remove(at: index)
                }
            } else if let newValue {
                fields.append(Field(key: key, value: newValue))
            }
        }
    }

    /// Appends a field without checking for an existing key.
    public mutating func append(_ key: String, _ value: BSON) {
        fields.append(Field(key: key, value: value))
    }

    /// The keys, in order.
    public var keys: [String] { fields.map(\.key) }
}

extension BSONDocument: RandomAccessCollection {
    /// The position of the first field.
    public var startIndex: Int { fields.startIndex }
    /// One past the position of the last field.
    public var endIndex: Int { fields.endIndex }
    /// The key and value of the field at `position`.
    public subscript(position: Int) -> (key: String, value: BSON) {
        let element = fields[position]
        return (element.key, element.value)
    }
}

extension BSONDocument: ExpressibleByDictionaryLiteral {
    /// A document with the literal's fields, in order (duplicates kept).
    public init(dictionaryLiteral elements: (String, BSON)...) {
        self.fields = elements.map { Field(key: $0.0, value: $0.1) }
    }
}
