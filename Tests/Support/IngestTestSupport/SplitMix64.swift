/// SplitMix64 (Steele, Lea and Flood): a small, seedable generator, so that
/// every randomised test reproduces from the seed it prints.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let delay = UInt32.random(in: 0...100_000, using: &random)
/// ```
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64

    package init(seed: UInt64) { state = seed }

    package init(state: UInt64) { self.state = state }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
