extension IngestLogger {
    /// A metadata value, as in swift-log: a string, a value printed with
    /// its description, or a nested dictionary or array of them.
    ///
    /// ```swift
    /// logger.info("paid", metadata: ["order": "A-17", "items": ["1", "2"], "user": ["id": "42"]])
    /// ```
    public enum MetadataValue: Sendable, Hashable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
        ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral
    {
        /// A string.
        case string(String)
        /// A value stored as its `description`.
        case stringConvertible(String)
        /// A nested dictionary (an embedded document).
        case dictionary([String: MetadataValue])
        /// An array.
        case array([MetadataValue])

        /// A value stored with its description: `.describing(42)`.
        public static func describing(_ value: some CustomStringConvertible) -> MetadataValue {
            .stringConvertible(value.description)
        }

        public init(stringLiteral value: String) { self = .string(value) }
        public init(dictionaryLiteral elements: (String, MetadataValue)...) {
            self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
        }
        public init(arrayLiteral elements: MetadataValue...) { self = .array(elements) }

        /// The value as text (dictionaries and arrays in a JSON-like form).
        public var description: String {
            switch self {
            case .string(let text), .stringConvertible(let text): return text
            case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
            case .dictionary(let values):
                return "[" + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
            }
        }
    }

    /// Metadata: keys to values, merged from the logger, its provider and the call.
    public typealias Metadata = [String: MetadataValue]

    /// Supplies metadata from the context at each enabled log call, such as
    /// the id of the request being handled (from a task-local value).
    ///
    /// ```swift
    /// enum RequestContext { @TaskLocal static var id: String? }
    /// let provider = IngestLogger.MetadataProvider { RequestContext.id.map { ["request_id": .string($0)] } ?? [:] }
    /// var logger = IngestLogger(label: "api", writer: writer, metadataProvider: provider)
    /// ```
    public struct MetadataProvider: Sendable {
        @usableFromInline let provide: @Sendable () -> Metadata

        /// A provider calling `provide` at each enabled log call.
        public init(_ provide: @escaping @Sendable () -> Metadata) { self.provide = provide }

        /// The metadata now.
        public func get() -> Metadata { provide() }

        /// A provider merging `providers` (later ones win on equal keys).
        public static func multiplex(_ providers: [MetadataProvider]) -> MetadataProvider {
            MetadataProvider {
                var merged: Metadata = [:]
                for provider in providers { merged.merge(provider.get()) { _, new in new } }
                return merged
            }
        }
    }

    /// A log message; a string literal or interpolation, as in swift-log.
    public struct Message: Sendable, Hashable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByStringInterpolation
    {
        /// The text.
        public var description: String
        /// A message with `text`.
        public init(_ text: String) { description = text }
        public init(stringLiteral value: String) { description = value }
    }
}
