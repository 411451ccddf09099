/// A string or value could not be converted to or from ``Decimal128``
/// exactly.
///
/// ```swift
/// do {
///     _ = try Decimal128(parsing: "1E-6177")
/// } catch where error.code == .inexact {
///     print(error)   // the value would need rounding
/// }
/// ```
public struct Decimal128Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem. Extensible: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The text is not a decimal number, `Infinity` or `NaN`.
        public static let syntax = Code(rawValue: "syntax")
        /// The value has more significant digits than decimal128 holds, or
        /// is too small: storing it would round.
        public static let inexact = Code(rawValue: "inexact")
        /// The value is too large for decimal128.
        public static let overflow = Code(rawValue: "overflow")
        /// The value has no exact equivalent in the target type (for
        /// example infinity or a huge exponent in Foundation's `Decimal`).
        public static let notRepresentable = Code(rawValue: "notRepresentable")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The input (text, or the value being converted), cut to 80 characters.
    public var input: String
    /// What happened, for people.
    public var message: String

    public init(code: Code, input: String, message: String) {
        self.code = code
        self.input = input.count > 80 ? String(input.prefix(80)) + "…" : input
        self.message = message
    }

    public var description: String {
        "Decimal128 \(code) error for '\(input)': \(message)"
    }
}
