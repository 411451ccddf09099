/// An error in a schema itself: a rule broken by a class or property, or a
/// schema file that cannot be decoded. The message names the class and
/// property and says how to fix it.
///
/// ```swift
/// do { try schema.checkStructure(synced: true) }
/// catch let error as SchemaError { print(error.code, error.className ?? "", error.message) }
/// ```
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Two classes share one class name.
        public static let duplicateClassName = Code(rawValue: "duplicateClassName")
        /// Two properties of one class share one stored name.
        public static let duplicateProperty = Code(rawValue: "duplicateProperty")
        /// A class or property name is empty or not usable as a field name.
        public static let invalidName = Code(rawValue: "invalidName")
        /// A synced class has no primary key named `_id`.
        public static let missingPrimaryKey = Code(rawValue: "missingPrimaryKey")
        /// A primary key of a type, kind or optionality that cannot be one.
        public static let invalidPrimaryKey = Code(rawValue: "invalidPrimaryKey")
        /// A property links to an asymmetric class.
        public static let linkToAsymmetric = Code(rawValue: "linkToAsymmetric")
        /// An object property names a class the schema does not contain.
        public static let unknownTargetClass = Code(rawValue: "unknownTargetClass")
        /// A property type or combination that is not supported.
        public static let unsupportedPropertyType = Code(rawValue: "unsupportedPropertyType")
        /// An index on a type that cannot be indexed.
        public static let invalidIndex = Code(rawValue: "invalidIndex")
        /// A JSON schema that cannot be decoded.
        public static let invalidJSON = Code(rawValue: "invalidJSON")
        /// A BSON schema that cannot be decoded.
        public static let invalidBSON = Code(rawValue: "invalidBSON")
    }

    /// What went wrong.
    public var code: Code
    /// The class concerned, if any.
    public var className: String?
    /// The property concerned, if any.
    public var propertyName: String?
    /// What happened and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, className: String? = nil, propertyName: String? = nil, message: String) {
        self.code = code
        self.className = className
        self.propertyName = propertyName
        self.message = message
    }

    public var description: String { message }
}
