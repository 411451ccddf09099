/// An IEEE 754-2008 128-bit decimal floating-point value in the binary integer
/// decimal (BID) encoding, as BSON stores it.
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
}
