import Foundation
import IngestCore

/// An error from opening a realm, from its schema or from a write. The
/// message says what happened and how to fix it; `className`,
/// `propertyName` and `fileURL` carry the context.
///
/// ```swift
/// do {
///     let realm = try Realm(configuration: config)
/// } catch let error as RealmError where error.code == .asymmetricTypeInLocalRealm {
///     print(error.message)
/// }
/// ```
public struct RealmError: Error, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Opening and schema
        /// A local configuration lists an `AsymmetricObject` type.
        public static let asymmetricTypeInLocalRealm = Code(rawValue: "asymmetricTypeInLocalRealm")
        /// A synced configuration lists an ordinary `Object` type.
        public static let objectTypeInSyncedRealm = Code(rawValue: "objectTypeInSyncedRealm")
        /// The schema breaks a rule (see ``SchemaError``, in `underlyingError`).
        public static let invalidSchema = Code(rawValue: "invalidSchema")
        /// A `@Persisted` property of a type or shape that cannot be stored.
        public static let unsupportedPropertyType = Code(rawValue: "unsupportedPropertyType")
        /// Two classes share one class name.
        public static let duplicateClassName = Code(rawValue: "duplicateClassName")
        /// One file is open both as a local and as a synced realm.
        public static let fileOpenedAsLocalAndSynced = Code(rawValue: "fileOpenedAsLocalAndSynced")
        /// A synced configuration has nowhere to commit transactions.
        public static let missingTransactionSink = Code(rawValue: "missingTransactionSink")
        /// A synced configuration that is not flexible sync.
        public static let partitionSyncNotSupported = Code(rawValue: "partitionSyncNotSupported")
        /// A local configuration sets `encryptionKey`: local realms are not
        /// encrypted by this release.
        public static let encryptionNotSupported = Code(rawValue: "encryptionNotSupported")
        /// `encryptionKey` is not 32 bytes (the seed's 64-byte keys included).
        public static let invalidEncryptionKey = Code(rawValue: "invalidEncryptionKey")
        /// A synced configuration's `encryptionKey` differs from the key of the
        /// segment store its objects go to.
        public static let encryptionKeyMismatch = Code(rawValue: "encryptionKeyMismatch")

        // Writing
        /// A write (`create`, `commitWrite`) outside `write {}`.
        public static let notInWriteTransaction = Code(rawValue: "notInWriteTransaction")
        /// `write {}` or `beginWrite()` inside a write transaction.
        public static let nestedWriteTransaction = Code(rawValue: "nestedWriteTransaction")
        /// A value of the wrong type for its property.
        public static let wrongValueType = Code(rawValue: "wrongValueType")
        /// A required property is missing from a create value.
        public static let missingRequiredProperty = Code(rawValue: "missingRequiredProperty")
        /// A create value names a property the class does not have.
        public static let unknownProperty = Code(rawValue: "unknownProperty")
        /// A map key that cannot be a field name.
        public static let invalidMapKey = Code(rawValue: "invalidMapKey")
        /// Two objects with one primary key in one transaction.
        public static let duplicatePrimaryKey = Code(rawValue: "duplicatePrimaryKey")
        /// A class that is not part of this realm's schema.
        public static let typeNotInRealm = Code(rawValue: "typeNotInRealm")
        /// The transaction sink failed to commit; nothing was written.
        public static let commitFailed = Code(rawValue: "commitFailed")
        /// Cursors (``Realm/setCursor(_:named:)``) need a realm synced through
        /// a user's session (its segment store keeps them).
        public static let cursorsNotSupported = Code(rawValue: "cursorsNotSupported")

        // Reading
        /// An attempt to read asymmetric (upload-only) objects.
        public static let asymmetricObjectNotReadable = Code(rawValue: "asymmetricObjectNotReadable")
    }

    /// What went wrong.
    public var code: Code
    /// The class concerned, if any.
    public var className: String?
    /// The property concerned, if any.
    public var propertyName: String?
    /// The realm file concerned, if any.
    public var fileURL: URL?
    /// What happened and what to do.
    public var message: String
    /// The error underneath (a ``SchemaError``, the sink's error), if any.
    public var underlyingError: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code, className: String? = nil, propertyName: String? = nil, fileURL: URL? = nil,
        message: String, underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.className = className
        self.propertyName = propertyName
        self.fileURL = fileURL
        self.message = message
        self.underlyingError = underlyingError
    }

    public var description: String { message }
}

extension RealmError: LocalizedError {
    public var errorDescription: String? { message }
}

extension RealmError {
    /// A short description of a create value for messages: its type and,
    /// for small values, the value.
    static func describe(_ value: Any) -> String {
        guard let value = unwrapped(value) else { return "nil" }
        let text = String(describing: value)
        let type = String(describing: Swift.type(of: value))
        return text.count <= 40 ? "\(type) (\(value is String ? "\"\(text)\"" : text))" : type
    }

    static func wrongValueType(path: String, expected: String, found value: Any) -> RealmError {
        let parts = path.split(separator: ".", maxSplits: 1)
        return RealmError(
            .wrongValueType, className: parts.first.map(String.init), propertyName: parts.count > 1 ? String(parts[1]) : nil,
            message: "\(path): expected \(expected), found \(describe(value)); pass a value of the property's type")
    }

    static func missingRequiredProperty(className: String, property: String, type: String) -> RealmError {
        RealmError(
            .missingRequiredProperty, className: className, propertyName: property,
            message:
                "\(className).\(property): the required \(type) property is missing; give it a value, make it optional, or declare a default value"
        )
    }

    static func unknownProperty(className: String, path: String, property: String, known: [String]) -> RealmError {
        RealmError(
            .unknownProperty, className: className, propertyName: property,
            message: "\(path): \(className) has no property '\(property)'; its properties are \(known.joined(separator: ", "))")
    }

    static func invalidMapKey(path: String, key: String) -> RealmError {
        RealmError(
            .invalidMapKey, propertyName: path,
            message:
                "\(path): the map key \"\(key)\" cannot be stored; keys must be non-empty, contain no '.' or NUL and not start with '$'")
    }

    static func linkWithoutPrimaryKey(_ className: String) -> RealmError {
        RealmError(
            .invalidSchema, className: className,
            message:
                "links to \(className) are stored as its primary key, but it has none; give \(className) @Persisted(primaryKey: true) var _id"
        )
    }
}
