/// An error in a configuration file (the server's, the forwarder's), naming the field path
/// (`apps[0].auth.custom-token.keys[1].algorithm`) and what to do.
///
/// ```swift
/// do { _ = try ServerConfiguration(contentsOfFile: "ingest.json") }
/// catch let error as ConfigError { print(error) }
/// // ingest.json: apps[0].sink.kind: unknown sink kind "mysql"; use sqlite, postgres or clickhouse
/// ```
package struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The kind of problem. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The file could not be read.
        package static let unreadable = Code(rawValue: "unreadable")
        /// The file is not valid JSON.
        package static let syntax = Code(rawValue: "syntax")
        /// A key the configuration does not know (likely a typo).
        package static let unknownKey = Code(rawValue: "unknown_key")
        /// A required field is absent.
        package static let missingField = Code(rawValue: "missing_field")
        /// A field has the wrong JSON type.
        package static let wrongType = Code(rawValue: "wrong_type")
        /// A field has a value outside what is accepted.
        package static let invalidValue = Code(rawValue: "invalid_value")
    }

    /// The kind of problem.
    package var code: Code
    /// The JSON path of the field, e.g. `apps[0].sink.kind` (empty for the whole document).
    package var path: String
    /// What is wrong and what to do.
    package var message: String
    /// The configuration file, if the configuration came from one.
    package var file: String?

    package init(_ code: Code, path: String, _ message: String, file: String? = nil) {
        self.code = code
        self.path = path
        self.message = message
        self.file = file
    }

    package var description: String {
        let location = [file, path.isEmpty ? nil : path].compactMap { $0 }.joined(separator: ": ")
        return location.isEmpty ? message : "\(location): \(message)"
    }
}
