/// An IEEE 754-2008 128-bit decimal floating-point value in the binary integer
/// decimal (BID) encoding, as BSON stores it.
///
/// A finite value is `(-1)^sign × coefficient × 10^exponent` with a
/// coefficient of at most 34 decimal digits and an exponent in
/// -6176...6111. Values keep their exponent ("cohort"): `2.000` and `2` are
/// different values that compare unequal, print differently and hash
/// differently, because equality and hashing are by the 128 bits.
///
/// ```swift
/// let price = try Decimal128(parsing: "19.90")
/// print(price)                 // 19.90
/// let back = try Decimal(exactly: price)
/// ```
public struct Decimal128: Sendable, Hashable {
    /// The low 64 bits (bytes 0..<8 of the little-endian BSON encoding).
    public var low: UInt64
    /// The high 64 bits (bytes 8..<16), holding the sign, exponent and the
    /// top of the coefficient.
    public var high: UInt64

    /// Creates a value from its two 64-bit halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The smallest exponent of a finite value.
    public static let minExponent = -6176
    /// The largest exponent of a finite value.
    public static let maxExponent = 6111
    /// The most decimal digits a coefficient can have.
    public static let maxDigits = 34
    /// The largest coefficient: 34 nines.
    public static let maxCoefficient: UInt128 = 9_999_999_999_999_999_999_999_999_999_999_999

    static let exponentBias = 6176
    static let signBit: UInt64 = 1 << 63

    /// The canonical quiet NaN.
    public static let nan = Decimal128(high: 0x7C00_0000_0000_0000, low: 0)
    /// Positive infinity.
    public static let infinity = Decimal128(high: 0x7800_0000_0000_0000, low: 0)
    /// Negative infinity.
    public static let negativeInfinity = Decimal128(high: 0xF800_0000_0000_0000, low: 0)
    /// Zero with exponent 0 (`"0"`).
    public static let zero = Decimal128(high: 0x3040_0000_0000_0000, low: 0)

    /// Creates the exact value `(-1)^sign × coefficient × 10^exponent`.
    ///
    /// Like parsing, this never rounds: an exponent outside the range is
    /// brought into it only by removing trailing zeros from the coefficient
    /// or appending them (clamping), and a zero's exponent is clamped.
    /// Anything else throws ``Decimal128Error``.
    ///
    /// ```swift
    /// let cents = try Decimal128(isNegative: false, coefficient: 1990, exponent: -2) // 19.90
    /// ```
    public init(isNegative: Bool, coefficient: UInt128, exponent: Int) throws(Decimal128Error) {
        var coefficient = coefficient
        var exponent = exponent
        if coefficient == 0 {
            exponent = min(max(exponent, Self.minExponent), Self.maxExponent)
        } else {
            while coefficient > Self.maxCoefficient || exponent < Self.minExponent {
                guard coefficient % 10 == 0 else {
                    throw Decimal128Error(
                        code: .inexact, input: "\(isNegative ? "-" : "")\(coefficient)E\(exponent)",
                        message: "the value needs more than 34 significant digits or an exponent below \(Self.minExponent)")
                }
                coefficient /= 10
                exponent += 1
            }
            while exponent > Self.maxExponent {
                guard coefficient <= Self.maxCoefficient / 10 else {
                    throw Decimal128Error(
                        code: .overflow, input: "\(isNegative ? "-" : "")\(coefficient)E\(exponent)",
                        message: "the value is too large for decimal128 (exponent above \(Self.maxExponent))")
                }
                coefficient *= 10
                exponent -= 1
            }
        }
        let biased = UInt64(exponent + Self.exponentBias)
        self.high = (isNegative ? Self.signBit : 0) | biased << 49 | UInt64(truncatingIfNeeded: coefficient >> 64)
        self.low = UInt64(truncatingIfNeeded: coefficient)
    }

    /// Creates the exact value of an integer.
    public init(_ value: Int64) {
        let magnitude = UInt128(value.magnitude)
        let biased = UInt64(Self.exponentBias)
        self.high = (value < 0 ? Self.signBit : 0) | biased << 49
        self.low = UInt64(truncatingIfNeeded: magnitude)
    }

    /// True for every NaN (quiet or signaling, with or without payload).
    public var isNaN: Bool { (high >> 58) & 0x1F == 0x1F }

    /// True for positive and negative infinity.
    public var isInfinite: Bool { (high >> 58) & 0x1F == 0x1E }

    /// True for values that are neither NaN nor infinite.
    public var isFinite: Bool { (high >> 59) & 0xF != 0xF }

    /// True when the sign bit is set (including `-0` and negative NaN).
    public var isSignMinus: Bool { high & Self.signBit != 0 }

    /// Sign, coefficient and exponent of a finite value; nil for NaN and
    /// infinity. A non-canonical encoding (coefficient above 34 nines, or
    /// the "11" combination field) reads as a zero coefficient, as IEEE
    /// 754-2008 requires.
    public var finiteComponents: (isNegative: Bool, coefficient: UInt128, exponent: Int)? {
        guard isFinite else { return nil }
        let negative = isSignMinus
        if (high >> 61) & 0b11 == 0b11 {
            // Combination field "11": the implied coefficient is at least
            // 2^113, always above the maximum, so the value is zero.
            let biased = Int((high >> 47) & 0x3FFF)
            return (negative, 0, biased - Self.exponentBias)
        }
        let biased = Int((high >> 49) & 0x3FFF)
        var coefficient = UInt128(high & 0x1_FFFF_FFFF_FFFF) << 64 | UInt128(low)
        if coefficient > Self.maxCoefficient { coefficient = 0 }
        return (negative, coefficient, biased - Self.exponentBias)
    }
}

extension Decimal128: CustomStringConvertible {
    /// The string form of the decimal128 specification (and of
    /// `$numberDecimal` in Extended JSON): plain notation with the exact
    /// number of fraction digits the exponent gives, or scientific notation
    /// (`1.050E+4`, `1E-8`) when the exponent is positive or the adjusted
    /// exponent is below -6. Specials print as `NaN`, `Infinity`, `-Infinity`.
    public var description: String {
        guard let (negative, coefficient, exponent) = finiteComponents else {
            if isNaN { return "NaN" }
            return isSignMinus ? "-Infinity" : "Infinity"
        }
        let digits = Array(String(coefficient).utf8)
        let adjusted = exponent + digits.count - 1
        var out: [UInt8] = []
        out.reserveCapacity(digits.count + 12)
        if negative { out.append(UInt8(ascii: "-")) }
        if exponent > 0 || adjusted < -6 {
            out.append(digits[0])
            if digits.count > 1 {
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: digits[1...])
            }
            out.append(UInt8(ascii: "E"))
            out.append(adjusted < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            out.append(contentsOf: String(adjusted.magnitude).utf8)
        } else if exponent == 0 {
            out.append(contentsOf: digits)
        } else {
            let point = digits.count + exponent  // digits before the decimal point
            if point > 0 {
                out.append(contentsOf: digits[..<point])
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: digits[point...])
            } else {
                out.append(UInt8(ascii: "0"))
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -point))
                out.append(contentsOf: digits)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
