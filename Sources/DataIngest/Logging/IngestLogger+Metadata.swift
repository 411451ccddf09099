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

    /// A call's metadata written as a dictionary literal
    /// (`metadata: ["path": "/api/items"]`), kept as written: the writer
    /// thread makes the entries into ``Metadata`` (a later entry wins over
    /// an earlier one with the same key), so the caller neither hashes nor
    /// builds a dictionary. A ``Metadata`` value can be passed as well.
    public struct CallMetadata: Sendable, ExpressibleByDictionaryLiteral {
        @usableFromInline
        enum Storage: Sendable {
            case entries([(String, MetadataValue)])
            case metadata(Metadata)
        }

        @usableFromInline let storage: Storage

        @inlinable
        public init(dictionaryLiteral elements: (String, MetadataValue)...) { storage = .entries(elements) }

        /// The metadata of a ``Metadata`` value.
        public init(_ metadata: Metadata) { storage = .metadata(metadata) }

        /// The entries as ``Metadata`` (later entries win on equal keys).
        public var metadata: Metadata {
            switch storage {
            case .entries(let entries): return Dictionary(entries, uniquingKeysWith: { _, last in last })
            case .metadata(let metadata): return metadata
            }
        }

        /// Whether there is no entry.
        public var isEmpty: Bool {
            switch storage {
            case .entries(let entries): return entries.isEmpty
            case .metadata(let metadata): return metadata.isEmpty
            }
        }
    }

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
    ///
    /// An interpolation is not formatted on the caller's thread: the
    /// literal parts, strings and integers are kept as they are and the
    /// writer thread makes the text. Any other value is turned into text at
    /// the call, exactly as `String(describing:)` (and so `"\(value)"` in a
    /// `String`) does, so the text is the one the value had at the call.
    ///
    /// ```swift
    /// logger.info("request \(id) handled in \(ms) ms by \(worker)")
    /// ```
    public struct Message: Sendable, Hashable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByStringInterpolation
    {
        /// One part of a message: text, or an integer kept as a number
        /// until the text is made.
        @usableFromInline
        enum Piece: Sendable {
            case empty
            case text(String)
            case int(Int64)
            case uint(UInt64)
        }

        /// An interpolation's parts: the first six in the value itself, so
        /// a typical message allocates nothing on the caller's thread; any
        /// further parts in an array.
        @usableFromInline
        struct Pieces: Sendable {
            @usableFromInline var count = 0
            @usableFromInline var p0 = Piece.empty, p1 = Piece.empty, p2 = Piece.empty
            @usableFromInline var p3 = Piece.empty, p4 = Piece.empty, p5 = Piece.empty
            @usableFromInline var more: [Piece] = []

            @inlinable init() {}

            // Always inlined, as are the interpolation's `append…` below: in
            // the caller's code `count` is then known at each part, so the
            // switch folds to one store.
            @inlinable @inline(__always)
            mutating func append(_ piece: Piece) {
                switch count {
                case 0: p0 = piece
                case 1: p1 = piece
                case 2: p2 = piece
                case 3: p3 = piece
                case 4: p4 = piece
                case 5: p5 = piece
                default: more.append(piece)
                }
                count &+= 1
            }

            /// Calls `body` with each part, in order (without copying them into an array).
            func forEach(_ body: (Piece) -> Void) {
                let inline = Swift.min(count, 6)
                if inline > 0 { body(p0) }
                if inline > 1 { body(p1) }
                if inline > 2 { body(p2) }
                if inline > 3 { body(p3) }
                if inline > 4 { body(p4) }
                if inline > 5 { body(p5) }
                for piece in more { body(piece) }
            }
        }

        @usableFromInline
        enum Storage: Sendable {
            case text(String)
            case pieces(Pieces)
        }

        @usableFromInline var storage: Storage

        /// The text (made from the parts on first use of an interpolation).
        public var description: String {
            get {
                switch storage {
                case .text(let text): return text
                case .pieces(let pieces):
                    var capacity = 0
                    pieces.forEach { piece in
                        if case .text(let part) = piece { capacity += part.utf8.count } else { capacity += 20 }
                    }
                    var text = ""
                    text.reserveCapacity(capacity)
                    pieces.forEach { piece in
                        switch piece {
                        case .empty: break
                        case .text(let part): text += part
                        case .int(let value): text += String(value)
                        case .uint(let value): text += String(value)
                        }
                    }
                    return text
                }
            }
            set { storage = .text(newValue) }
        }

        /// A message with `text`.
        public init(_ text: String) { storage = .text(text) }

        /// The empty message.
        static let empty = Message("")
        public init(stringLiteral value: String) { storage = .text(value) }
        @inlinable
        public init(stringInterpolation: StringInterpolation) { storage = .pieces(stringInterpolation.pieces) }

        public static func == (lhs: Message, rhs: Message) -> Bool { lhs.description == rhs.description }
        public func hash(into hasher: inout Hasher) { hasher.combine(description) }

        /// Collects an interpolated message's parts (see ``Message``). Every
        /// value `String`'s interpolation accepts is accepted, with the same
        /// text.
        public struct StringInterpolation: StringInterpolationProtocol, Sendable {
            @usableFromInline var pieces = Pieces()

            @inlinable
            public init(literalCapacity: Int, interpolationCount: Int) {}

            @inlinable @inline(__always)
            public mutating func appendLiteral(_ literal: String) {
                if !literal.isEmpty { pieces.append(.text(literal)) }
            }

            /// A string, kept as it is.
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: String) { pieces.append(.text(value)) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: Int) { pieces.append(.int(Int64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: Int64) { pieces.append(.int(value)) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: Int32) { pieces.append(.int(Int64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: Int16) { pieces.append(.int(Int64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: Int8) { pieces.append(.int(Int64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: UInt) { pieces.append(.uint(UInt64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: UInt64) { pieces.append(.uint(value)) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: UInt32) { pieces.append(.uint(UInt64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: UInt16) { pieces.append(.uint(UInt64(value))) }
            @inlinable @inline(__always)
            public mutating func appendInterpolation(_ value: UInt8) { pieces.append(.uint(UInt64(value))) }

            /// Any other value: its text now, as `String(describing:)` makes it.
            @inlinable
            public mutating func appendInterpolation<T>(_ value: T) {
                pieces.append(.text(String(describing: value)))
            }
        }
    }
}
