/// An ordered list of HTTP header fields with case-insensitive name lookup.
///
/// Field order and repeated fields are kept as received, as RFC 9110 requires
/// for fields such as `Set-Cookie`.
///
/// ```swift
/// var headers: HTTPHeaders = ["Content-Type": "application/json"]
/// headers.add(name: "Cache-Control", value: "no-store")
/// headers["content-type"]   // "application/json"
/// ```
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field line.
    public struct Field: Sendable, Equatable {
        /// The field name as sent (compare it case-insensitively).
        public var name: String
        /// The field value without leading and trailing whitespace.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in the order they were received or added.
    public private(set) var fields: [Field]

    /// Creates headers from `(name, value)` pairs, keeping their order.
    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates headers from a dictionary literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// The value of the first field named `name` (case-insensitive), or nil.
    /// Setting replaces every field of that name; setting nil removes them.
    public subscript(name: String) -> String? {
        get { fields.first { asciiCaseInsensitiveEquals($0.name, name) }?.value }
        set {
            if let newValue { replaceOrAdd(name: name, value: newValue) } else { remove(name: name) }
        }
    }

    /// Every value of the fields named `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        fields.filter { asciiCaseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    /// Whether a field named `name` is present (case-insensitive).
    public func contains(_ name: String) -> Bool {
        fields.contains { asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces the fields named `name` with one field, or appends it.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field named `name` (case-insensitive).
    public mutating func remove(name: String) {
        fields.removeAll { asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// Whether the comma-separated list in the fields named `name` contains
    /// `token` (case-insensitive), e.g. `Connection: keep-alive, Upgrade`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        for value in values(for: name) {
            for element in value.split(separator: ",") {
                let trimmed = element.trimmingHTTPWhitespace()
                if asciiCaseInsensitiveEquals(trimmed, token) { return true }
            }
        }
        return false
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}

/// Compares two strings ignoring ASCII case, without allocating.
@usableFromInline
func asciiCaseInsensitiveEquals<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
    let a = a.utf8, b = b.utf8
    guard a.count == b.count else { return false }
    var ia = a.makeIterator(), ib = b.makeIterator()
    while let x = ia.next(), let y = ib.next() {
        if x == y { continue }
        let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
        let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
        if lx != ly { return false }
    }
    return true
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (HTTP's OWS).
    package func trimmingHTTPWhitespace() -> Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
