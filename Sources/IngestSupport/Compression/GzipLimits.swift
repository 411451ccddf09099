/// Limits applied while inflating, against decompression bombs.
///
/// ```swift
/// let limits = GzipLimits(maxOutputBytes: 32 << 20, maxRatio: 100)
/// let body = try Gzip.decompress(upload, limits: limits)
/// ```
package struct GzipLimits: Sendable, Hashable {
    /// The most decompressed bytes a stream may produce. Default 256 MiB.
    package var maxOutputBytes: Int
    /// The largest allowed ratio of decompressed to compressed bytes, checked once
    /// the output exceeds ``ratioCheckFloorBytes``. Default 200 (deflate of
    /// repetitive BSON stays well below it; a bomb is near 1,000).
    package var maxRatio: Int
    /// Output below this size is never rejected for its ratio, so that small,
    /// very repetitive inputs are accepted. Default 1 MiB.
    package var ratioCheckFloorBytes: Int

    /// Creates limits; every argument has a documented default.
    package init(maxOutputBytes: Int = 256 << 20, maxRatio: Int = 200, ratioCheckFloorBytes: Int = 1 << 20) {
        self.maxOutputBytes = maxOutputBytes
        self.maxRatio = maxRatio
        self.ratioCheckFloorBytes = ratioCheckFloorBytes
    }

    /// No practical limit (for data this process wrote itself).
    package static let unlimited = GzipLimits(maxOutputBytes: .max, maxRatio: .max, ratioCheckFloorBytes: .max)
}
