/// One way a document does not match its schema, found by
/// ``Schema/validate(_:against:)``.
///
/// `path` locates the value: `deviceId`, `location.latitude`, `tags[2]`,
/// `readings.morning`.
public struct SchemaViolation: Sendable, Hashable, CustomStringConvertible {
    /// What is wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A required (non-optional) property is absent.
        public static let missingRequiredField = Code(rawValue: "missingRequiredField")
        /// A non-optional property or element is null.
        public static let nullNotAllowed = Code(rawValue: "nullNotAllowed")
        /// A value has the wrong BSON type.
        public static let wrongType = Code(rawValue: "wrongType")
        /// A list element or map value has the wrong BSON type.
        public static let wrongElementType = Code(rawValue: "wrongElementType")
        /// The document has a field the schema does not declare.
        public static let unknownField = Code(rawValue: "unknownField")
        /// A field appears twice in one document.
        public static let duplicateField = Code(rawValue: "duplicateField")
        /// A number does not fit the property (a Float out of range).
        public static let outOfRange = Code(rawValue: "outOfRange")
        /// A map key is empty, contains '.' or starts with '$'.
        public static let invalidMapKey = Code(rawValue: "invalidMapKey")
        /// The class is not in the schema, or is not an uploadable class.
        public static let unknownClass = Code(rawValue: "unknownClass")
    }

    /// Where in the document, e.g. `location.latitude` or `tags[2]`.
    public var path: String
    /// What is wrong.
    public var code: Code
    /// A sentence for people: what was expected and what was found.
    public var reason: String

    /// Creates a violation.
    public init(path: String, code: Code, reason: String) {
        self.path = path
        self.code = code
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}
