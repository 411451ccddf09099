extension Decimal128: Codable {
    /// Decodes from the decimal string form (`"19.90"`, `"1E+3"`, `"NaN"`),
    /// exactly as ``init(parsing:)`` reads it.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try Decimal128(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes as the decimal string form (``description``), which keeps
    /// every digit and the exponent: `2.000` stays `"2.000"`.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension Decimal128: ExpressibleByIntegerLiteral {
    /// An exact integer: `let quantity: Decimal128 = 12`.
    public init(integerLiteral value: Int64) {
        self.init(value)
    }
}
