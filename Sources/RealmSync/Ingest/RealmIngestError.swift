/// A changeset that cannot be turned into documents: it breaks the rules of
/// the instructions (a path to nothing, a prior size that does not match),
/// touches a table this server does not accept, or declares a schema that
/// conflicts with the app's. Nothing of the changeset is stored; the client
/// gets ``syncCode``.
///
/// ```swift
/// do { _ = try ingestor.ingest(changeset) }
/// catch where error.code == .notAsymmetric { print(error.message) }  // "... accepts asymmetric data only ..."
/// ```
public struct RealmIngestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The changeset does not decode (see ``RealmIngestError/changesetError``).
        public static let badChangeset = Code(rawValue: "badChangeset")
        /// An instruction that cannot apply: an object not created in this
        /// changeset, a path to nothing, an index or prior size that does not
        /// match, a value of the wrong kind for its place.
        public static let invalidInstruction = Code(rawValue: "invalidInstruction")
        /// A write to a table that is not asymmetric (bidirectional sync).
        public static let notAsymmetric = Code(rawValue: "notAsymmetric")
        /// A table or column the schema does not have, or one declared
        /// differently, or a table or column erased.
        public static let invalidSchemaChange = Code(rawValue: "invalidSchemaChange")
        /// A column type this server cannot store.
        public static let unsupportedType = Code(rawValue: "unsupportedType")
        /// More values than ``ChangesetIngestor/Limits/maxValues``.
        public static let limitExceeded = Code(rawValue: "limitExceeded")
    }

    /// What went wrong.
    public var code: Code
    /// The table concerned, if any.
    public var table: String?
    /// The field concerned, if any.
    public var field: String?
    /// The decoding error, for ``Code/badChangeset``.
    public var changesetError: ChangesetError?
    /// What happened and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, table: String? = nil, field: String? = nil, changesetError: ChangesetError? = nil, message: String) {
        self.code = code
        self.table = table
        self.field = field
        self.changesetError = changesetError
        self.message = message
    }

    /// The Realm error code to answer with.
    public var syncCode: SyncErrorCode {
        switch code {
        case .notAsymmetric: return .writeNotAllowed
        case .invalidSchemaChange, .unsupportedType: return .invalidSchemaChange
        case .limitExceeded: return .limitsExceeded
        default: return .badChangeset
        }
    }

    public var description: String { message }
}
