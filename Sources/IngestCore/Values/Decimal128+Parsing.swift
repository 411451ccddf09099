extension Decimal128 {
    /// Parses a decimal string exactly, as the decimal128 specification and
    /// the BSON corpus require.
    ///
    /// Accepted: an optional sign, digits with at most one decimal point
    /// (`12.5`, `.5`, `5.`), an optional exponent (`1E+3`, `1e3`, `1E-3`),
    /// and the specials `Infinity`, `Inf` and `NaN` in any case. Trailing
    /// zeros are kept (`2.000` stays `2.000`). Exponents outside the range
    /// are clamped only where no digit is lost; a value that would need
    /// rounding, overflows, or is not a number throws ``Decimal128Error``.
    ///
    /// ```swift
    /// let a = try Decimal128(parsing: "-1.00E-8")
    /// let b = try Decimal128(parsing: "1E6112")    // clamped: 1.0E+6112
    /// ```
    public init(parsing text: String) throws(Decimal128Error) {
        var text = text
        let result = text.withUTF8 { bytes in Self.parse(bytes) }
        switch result {
        case .success(let value): self = value
        case .failure(let error): throw error
        }
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<Decimal128, Decimal128Error> {
        func failure(_ code: Decimal128Error.Code, _ message: String) -> Result<Decimal128, Decimal128Error> {
            .failure(Decimal128Error(code: code, input: String(decoding: bytes, as: UTF8.self), message: message))
        }
        let count = bytes.count
        var index = 0
        var negative = false
        if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            negative = bytes[index] == UInt8(ascii: "-")
            index += 1
        }
        // Specials, case-insensitively.
        if index < count, !isDigit(bytes[index]), bytes[index] != UInt8(ascii: ".") {
            var word = ""
            for byte in bytes[index...] {
                guard byte < 0x80 else { return failure(.syntax, "not a decimal number") }
                word.unicodeScalars.append(Unicode.Scalar(byte | 0x20))
            }
            switch word {
            case "inf", "infinity": return .success(negative ? .negativeInfinity : .infinity)
            case "nan":
                var value = Decimal128.nan
                if negative { value.high |= signBit }
                return .success(value)
            default: return failure(.syntax, "not a decimal number, 'Infinity' or 'NaN'")
            }
        }

        // Significant digits (leading zeros dropped), and how many digits
        // follow the decimal point.
        var digits: [UInt8] = []
        var sawDigit = false
        var sawPoint = false
        var fractionDigits = 0
        while index < count {
            let byte = bytes[index]
            if isDigit(byte) {
                sawDigit = true
                if sawPoint { fractionDigits += 1 }
                if !(digits.isEmpty && byte == UInt8(ascii: "0")) { digits.append(byte - UInt8(ascii: "0")) }
            } else if byte == UInt8(ascii: ".") {
                guard !sawPoint else { return failure(.syntax, "more than one decimal point") }
                sawPoint = true
            } else {
                break
            }
            index += 1
        }
        guard sawDigit else { return failure(.syntax, "no digits") }

        // The exponent saturates far outside the representable range, so
        // "0E+2147483647" clamps and "1E+99999999999" overflows without
        // integer overflow.
        var exponent = 0
        if index < count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            var exponentNegative = false
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var sawExponentDigit = false
            while index < count, isDigit(bytes[index]) {
                sawExponentDigit = true
                exponent = min(exponent * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1_000_000_000)
                index += 1
            }
            guard sawExponentDigit else { return failure(.syntax, "the exponent has no digits") }
            if exponentNegative { exponent = -exponent }
        }
        guard index == count else { return failure(.syntax, "unexpected character after the number") }
        exponent -= fractionDigits

        if digits.isEmpty {
            // Zero: any exponent is exact once clamped into range.
            exponent = min(max(exponent, minExponent), maxExponent)
        }
        // Drop trailing zeros beyond 34 digits or below the smallest
        // exponent; any other digit there would have to be rounded away.
        while !digits.isEmpty && (digits.count > maxDigits || exponent < minExponent) {
            guard digits.last == 0 else {
                return failure(.inexact, "the value needs rounding to fit decimal128 (34 digits, exponent \(minExponent)...\(maxExponent))")
            }
            digits.removeLast()
            exponent += 1
        }
        // Exponents above the maximum are brought down by appending zeros
        // ("clamping"), while the coefficient has room for them.
        while exponent > maxExponent {
            guard digits.count < maxDigits else {
                return failure(.overflow, "the value is too large for decimal128")
            }
            digits.append(0)
            exponent -= 1
        }
        var coefficient: UInt128 = 0
        for digit in digits { coefficient = coefficient * 10 + UInt128(digit) }
        let biased = UInt64(exponent + exponentBias)
        let high = (negative ? signBit : 0) | biased << 49 | UInt64(truncatingIfNeeded: coefficient >> 64)
        return .success(Decimal128(high: high, low: UInt64(truncatingIfNeeded: coefficient)))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
