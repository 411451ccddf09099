extension JSONValue {
    /// The first member named `key` of an object, or `nil`.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The value as an integer, if it is a number written without fraction or exponent
    /// (or one that is integral and fits `Int64`).
    package var integerValue: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        guard let double = Double(text), double.rounded() == double, abs(double) < 9.0e18 else { return nil }
        return Int64(double)
    }

    /// The value as a `Double`, if it is a number.
    package var doubleValue: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }

    /// The value as a string, if it is one.
    package var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    /// The value as a Boolean, if it is one.
    package var boolValue: Bool? {
        guard case .bool(let flag) = self else { return nil }
        return flag
    }

    /// A name for the kind of value, for error messages ("a string", "an object").
    package var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// A JSON number value from an integer.
    package static func integer(_ value: some BinaryInteger) -> JSONValue { .number(String(value)) }
}
