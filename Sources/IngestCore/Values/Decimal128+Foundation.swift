import Foundation

extension Decimal128 {
    /// Converts Foundation's `Decimal` exactly.
    ///
    /// `Decimal` holds up to 38 digits; a value with more than 34
    /// significant digits throws ``Decimal128Error`` (code `.inexact`)
    /// rather than rounding. `Decimal.nan` becomes ``Decimal128/nan``.
    ///
    /// ```swift
    /// let price = try Decimal128(exactly: Decimal(string: "19.90")!)
    /// ```
    public init(exactly value: Decimal) throws(Decimal128Error) {
        if value.isNaN {
            self = .nan
            return
        }
        // Decimal's description is its exact plain-notation digits, which
        // the exact parser turns into the coefficient and exponent.
        let text = value.description
        self = try Decimal128(parsing: text)
        guard let back = try? Decimal(exactly: self), back == value else {
            throw Decimal128Error(
                code: .notRepresentable, input: text,
                message: "Foundation.Decimal value has no exact decimal128 equivalent")
        }
    }

    /// Sign, coefficient without trailing zeros, and exponent: equal for
    /// all members of a cohort (`2.000` and `2`).
    func normalizedComponents() -> (isNegative: Bool, coefficient: UInt128, exponent: Int)? {
        guard let (negative, coefficientIn, exponentIn) = finiteComponents else { return nil }
        var coefficient = coefficientIn
        var exponent = exponentIn
        if coefficient == 0 { return (negative, 0, 0) }
        while coefficient % 10 == 0 {
            coefficient /= 10
            exponent += 1
        }
        return (negative, coefficient, exponent)
    }
}

extension Decimal {
    /// Converts a ``Decimal128`` to Foundation's `Decimal` where the value
    /// is exactly representable, and throws ``Decimal128Error`` where not.
    ///
    /// Infinity has no `Decimal` equivalent and throws; NaN becomes
    /// `Decimal.nan`; `-0` becomes `0` (Decimal has no negative zero).
    /// Trailing zeros are dropped to bring the exponent into `Decimal`'s
    /// range (-128...127); values that still fall outside it (`1E+130`:
    /// Foundation strips the mantissa's trailing zeros, so it cannot hold
    /// it) throw with code `.notRepresentable`.
    ///
    /// ```swift
    /// let amount = try Decimal(exactly: Decimal128(parsing: "1.05E+3"))  // 1050
    /// ```
    public init(exactly value: Decimal128) throws(Decimal128Error) {
        if value.isNaN {
            self = .nan
            return
        }
        guard let (negative, coefficientIn, exponentIn) = value.finiteComponents else {
            throw Decimal128Error(
                code: .notRepresentable, input: value.description,
                message: "Foundation.Decimal has no infinity")
        }
        var coefficient = coefficientIn
        var exponent = exponentIn
        if coefficient == 0 {
            self = 0
            return
        }
        // Decimal: a 128-bit mantissa and an 8-bit signed exponent.
        while exponent < -128, coefficient % 10 == 0 {
            coefficient /= 10
            exponent += 1
        }
        while exponent > 127, coefficient <= UInt128.max / 10 {
            coefficient *= 10
            exponent -= 1
        }
        guard (-128...127).contains(exponent) else {
            throw Decimal128Error(
                code: .notRepresentable, input: value.description,
                message: "the exponent is outside Foundation.Decimal's range -128...127")
        }
        // The mantissa in two exact steps: high * 2^64 + low. Every
        // intermediate value is an integer below 2^128, so Decimal's
        // arithmetic is exact.
        let twoTo64 = Decimal(UInt64.max) + 1
        let significand =
            Decimal(UInt64(truncatingIfNeeded: coefficient >> 64)) * twoTo64
            + Decimal(UInt64(truncatingIfNeeded: coefficient))
        let result = Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: significand)
        // Guard against any rounding inside Foundation: the result must
        // convert back to the same number.
        guard let back = try? Decimal128(parsing: result.description), Decimal128.sameNumber(back, value)
        else {
            throw Decimal128Error(
                code: .notRepresentable, input: value.description,
                message: "Foundation.Decimal cannot hold this value exactly")
        }
        self = result
    }
}

extension Decimal128 {
    /// True when both are finite and denote the same number (ignoring
    /// cohort, and treating -0 and 0 as equal).
    static func sameNumber(_ a: Decimal128, _ b: Decimal128) -> Bool {
        guard let x = a.normalizedComponents(), let y = b.normalizedComponents() else { return false }
        if x.coefficient == 0 && y.coefficient == 0 { return true }
        return x.isNegative == y.isNegative && x.coefficient == y.coefficient && x.exponent == y.exponent
    }
}
