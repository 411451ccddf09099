import IngestCore

/// An ordered list property, stored as a BSON array.
///
/// ```swift
/// class Reading: AsymmetricObject {
///     @Persisted(primaryKey: true) var _id: ObjectId
///     @Persisted var samples: List<Double>
///     @Persisted var path: List<Location>      // embedded objects
/// }
/// let reading = Reading()
/// reading.samples.append(objectsIn: [1.5, 2.5])
/// ```
///
/// Elements may be any ``PersistableValue`` except lists and maps; lists of
/// objects cannot hold nil.
public final class List<Element: PersistableValue>: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral {
    private var elements: [Element]

    /// An empty list.
    public init() { elements = [] }

    /// A list holding `elements`.
    public init(_ elements: some Sequence<Element>) { self.elements = Array(elements) }

    public required init(arrayLiteral elements: Element...) { self.elements = elements }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(position: Int) -> Element {
        get { elements[position] }
        set { elements[position] = newValue }
    }

    /// Appends one element.
    public func append(_ element: Element) { elements.append(element) }
    /// Appends the elements of a sequence.
    public func append(objectsIn sequence: some Sequence<Element>) { elements.append(contentsOf: sequence) }
    /// Inserts an element at `index`.
    public func insert(_ element: Element, at index: Int) { elements.insert(element, at: index) }
    /// Removes and returns the element at `index`.
    @discardableResult public func remove(at index: Int) -> Element { elements.remove(at: index) }
    /// Removes every element.
    public func removeAll() { elements.removeAll() }
    /// The elements as an array.
    public var array: [Element] { elements }
}

extension List: PersistableValue {
    public static var _persistedInfo: PersistedValueInfo {
        var info = Element._persistedInfo
        if info.collection != .single {
            info.unsupported = "a List cannot hold \(info.typeDescription); nested collections are not supported"
        } else if info.type == .object && info.isOptional {
            info.unsupported = "a List of objects cannot hold nil; declare the element type without '?'"
        }
        info.collection = .list
        info.typeDescription = "List<\(info.typeDescription)>"
        return info
    }
    public static func _persistedDefault() -> List<Element> { List() }

    public func _encodeBSON(key: EncodedKey, into encoder: inout BSONRecordEncoder) throws(RealmError) {
        encoder.key(BSONType.array, key)
        let start = encoder.beginDocument()
        for (index, element) in elements.enumerated() {
            try element._encodeBSON(key: EncodedKey.index(index), into: &encoder)
        }
        encoder.endDocument(start)
    }

    /// Accepts a `List`, or an array whose elements convert to `Element`.
    public static func _fromCreateValue(_ value: Any) -> List<Element>? {
        if let list = value as? List<Element> { return list }
        if let array = value as? [Element] { return List(array) }
        guard let array = value as? [Any] else { return nil }
        var converted: [Element] = []
        converted.reserveCapacity(array.count)
        for element in array {
            guard let element = Element._fromCreateValue(element) else { return nil }
            converted.append(element)
        }
        return List(converted)
    }

    public static func _encodeCreateValue(_ value: Any, key: EncodedKey, path: () -> String, into encoder: inout BSONRecordEncoder)
        throws(RealmError)
    {
        if let list = value as? List<Element> {
            try list._encodeBSON(key: key, into: &encoder)
            return
        }
        guard let array = value as? [Any] else {
            throw RealmError.wrongValueType(path: path(), expected: _persistedInfo.typeDescription, found: value)
        }
        encoder.key(BSONType.array, key)
        let start = encoder.beginDocument()
        for (index, element) in array.enumerated() {
            try Element._encodeCreateValue(element, key: EncodedKey.index(index), path: { "\(path())[\(index)]" }, into: &encoder)
        }
        encoder.endDocument(start)
    }
}

extension EncodedKey {
    private static let small: [EncodedKey] = (0..<64).map { EncodedKey(String($0)) }

    /// The key of array element `index`.
    static func index(_ index: Int) -> EncodedKey {
        index < small.count ? small[index] : EncodedKey(String(index))
    }
}
