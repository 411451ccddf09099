/// An error in the server configuration file, naming the field path
/// (`apps[0].auth.custom-token.keys[1].algorithm`) and what to do.
///
/// ```swift
/// do { _ = try ServerConfiguration(contentsOfFile: "ingest.json") }
/// catch let error as ConfigError { print(error) }
/// // ingest.json: apps[0].sink.kind: unknown sink kind "mysql"; use sqlite, postgres or clickhouse
/// ```
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The kind of problem. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The file could not be read.
        public static let unreadable = Code(rawValue: "unreadable")
        /// The file is not valid JSON.
        public static let syntax = Code(rawValue: "syntax")
        /// A key the configuration does not know (likely a typo).
        public static let unknownKey = Code(rawValue: "unknown_key")
        /// A required field is absent.
        public static let missingField = Code(rawValue: "missing_field")
        /// A field has the wrong JSON type.
        public static let wrongType = Code(rawValue: "wrong_type")
        /// A field has a value outside what is accepted.
        public static let invalidValue = Code(rawValue: "invalid_value")
    }

    /// The kind of problem.
    public var code: Code
    /// The JSON path of the field, e.g. `apps[0].sink.kind` (empty for the whole document).
    public var path: String
    /// What is wrong and what to do.
    public var message: String
    /// The configuration file, if the configuration came from one.
    public var file: String?

    public init(_ code: Code, path: String, _ message: String, file: String? = nil) {
        self.code = code
        self.path = path
        self.message = message
        self.file = file
    }

    public var description: String {
        let location = [file, path.isEmpty ? nil : path].compactMap { $0 }.joined(separator: ": ")
        return location.isEmpty ? message : "\(location): \(message)"
    }
}
